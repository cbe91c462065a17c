#pragma once
// Facts about processes from /proc, used to tell a live supervisor from a reused pid.

#include <cstdint>
#include <optional>
#include <string>

#include "tessel/base/result.hpp"

namespace tessel::agent {

// Field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat; nullopt when
// the process does not exist or is a zombie.
std::optional<uint64_t> process_start_time(int pid, const std::string& proc_root = "/proc");

// Parses the text of /proc/<pid>/stat (the comm field may hold spaces and parens).
Result<uint64_t> parse_stat_start_time(const std::string& stat);
// The state letter (R, S, Z, ...) from /proc/<pid>/stat text.
std::optional<char> parse_stat_state(const std::string& stat);

// True when `pid` runs and its start time equals `start_time`.
bool is_same_process_alive(int pid, uint64_t start_time, const std::string& proc_root = "/proc");

}  // namespace tessel::agent
