#pragma once
// Small file operations on cgroupfs (and the plain directories tests stand in for
// it): one read or one write per call, errors naming the file.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::agent {

// The whole (small) file, or an error naming it.
Result<std::string> read_cgroup_file(const std::string& path);
// One write(2) of `text` (a cgroup file takes one value per write). `append`: do not
// truncate (devices.deny takes one rule per write; a stand-in file keeps them all).
Status write_cgroup_file(const std::string& path, const std::string& text, bool append = false);
bool path_exists(const std::string& path);
// mkdir; an existing directory is fine.
Status make_dir(const std::string& path);
// rmdir; a missing directory is fine.
Status remove_dir(const std::string& path);
// The cgroups below `dir` (its subdirectories, theirs, ... at most 8 levels), the
// deepest first: the order rmdir needs. Empty when it has none or is gone.
std::vector<std::string> descendant_dirs(const std::string& dir);
// The first integer of a file ("12345\n"), or nullopt.
std::optional<int64_t> read_cgroup_int(const std::string& path);
// The value of `key` in a "key value" per line file (cpu.stat, memory.events,
// memory.oom_control), or nullopt.
std::optional<int64_t> read_cgroup_key(const std::string& path, const std::string& key);

// The controllers a task needs on v2 that `dir` offers (its cgroup.controllers), as
// cgroup.subtree_control takes them: "+cpuset +memory"; "" when it offers none.
std::string v2_enable_line(const std::string& dir);

}  // namespace tessel::agent
