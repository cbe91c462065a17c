#pragma once
// The signals a user may send a job's ranks (issue 31): POST /v1/jobs/{id}/signal and
// the JobSpec's warning `signal`. A fixed list, by Slurm's names without "SIG": USR1,
// USR2, TERM, INT, HUP, URG, CONT. Pure; callable from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::api {

class FieldReader;
struct JobSpec;

// A job's warning signal (JobSpec `signal`, Slurm's --signal NAME@BEFORE): `name` goes
// to every rank `before_s` seconds before the job's time limit, and when the job is
// preempted, before its stop begins.
struct WarningSignal {
  std::string name;       // One of the list.
  int64_t before_s = 60;  // 1 .. the job's time_limit_s.
  bool operator==(const WarningSignal&) const = default;
};
inline constexpr int64_t kDefaultWarningBeforeS = 60;  // Slurm's default.
// Reads the JobSpec's "signal" {"name", "before_s"} into `s.signal`, failing `r` with
// the field (signal.name, signal.before_s); call after time_limit_s is read.
void read_warning_signal(FieldReader& r, const nlohmann::json& spec, JobSpec& s);
nlohmann::json to_json(const WarningSignal& w);

// The body of POST /v1/jobs/{id}/signal, {"name": "USR1"}: the name, or a 400 naming
// the field ("name").
Result<std::string> parse_signal_request(const nlohmann::json& body);

// The signal's number for one of the names of the list, else nullopt.
std::optional<int> signal_number(std::string_view name);
// The list as the error messages show it: "USR1, USR2, TERM, INT, HUP, URG, CONT".
std::string signal_names();
// Whether `signo` is the number of a signal of the list (what a supervisor forwards).
bool is_job_signal(int signo);

// A signal a user sent the ranks of a job's current attempt: `id` counts up from 1
// within the attempt, so an agent delivers each once (those above the last it
// delivered). Stored with the job and carried in each of its assignments.
struct JobSignal {
  int id = 0;
  std::string name;  // One of the list.
  bool operator==(const JobSignal&) const = default;
};
// An attempt keeps its latest signals, this many.
inline constexpr size_t kMaxJobSignals = 16;
nlohmann::json to_json(const std::vector<JobSignal>& signals);
// [{"id": 1, "name": "USR1"}, ...]: ids positive and rising, names of the list.
Result<std::vector<JobSignal>> signals_from_json(const nlohmann::json& j);

}  // namespace tessel::api
