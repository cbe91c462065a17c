// cgroup v2: one directory per task, in the agent's delegated subtree.
#include "tessel/api/inventory.hpp"
#include "tessel/agent/cgroup_files.hpp"
#include "tessel/agent/cgroup_versions.hpp"
#include "tessel/agent/device_program.hpp"

namespace tessel::agent::cgroup_detail {

static const std::string& dir_of(const TaskCgroup& cg) {
  static const std::string none;
  auto it = cg.dirs.find("");
  return it == cg.dirs.end() ? none : it->second;
}

Status configure_v2(const TaskCgroup& cg) {
  const std::string& d = dir_of(cg);
  if (!cg.cpus.empty())
    if (auto st = write_cgroup_file(d + "/cpuset.cpus", api::format_cpu_list(cg.cpus)); !st) return st;
  if (cg.memory_limit_mib > 0) {
    if (auto st = write_cgroup_file(d + "/memory.max", std::to_string(cg.memory_limit_mib * 1024 * 1024)); !st)
      return st;
    if (path_exists(d + "/memory.swap.max"))  // Absent without swap accounting.
      if (auto st = write_cgroup_file(d + "/memory.swap.max", "0"); !st) return st;
  }
  if (cg.pids_max > 0)
    if (auto st = write_cgroup_file(d + "/pids.max", std::to_string(cg.pids_max)); !st) return st;
  if (!cg.deny.empty())
    if (auto st = attach_device_program(d, cg.deny); !st) return st;
  if (cg.leaf.empty()) return ok_status();
  // Its children (the leaf, its containers' cgroups) get the controllers its limits use.
  if (const std::string line = v2_enable_line(d); !line.empty())
    if (auto st = write_cgroup_file(d + "/cgroup.subtree_control", line); !st) return st;
  return make_dir(d + "/" + cg.leaf);
}

bool freeze_v2(const TaskCgroup& cg, bool frozen) {
  const std::string& d = dir_of(cg);
  return path_exists(d + "/cgroup.freeze") && write_cgroup_file(d + "/cgroup.freeze", frozen ? "1" : "0").ok();
}

bool kill_v2(const TaskCgroup& cg) {
  const std::string& d = dir_of(cg);
  return path_exists(d + "/cgroup.kill") && write_cgroup_file(d + "/cgroup.kill", "1").ok();
}

TaskUsage usage_v2(const TaskCgroup& cg) {
  const std::string& d = dir_of(cg);
  TaskUsage u;
  if (auto us = read_cgroup_key(d + "/cpu.stat", "usage_usec")) u.cpu_seconds = static_cast<double>(*us) / 1e6;
  if (auto peak = read_cgroup_int(d + "/memory.peak")) u.max_rss_mib = mib_rounded_up(*peak);  // Kernel 5.19+.
  if (auto kills = read_cgroup_key(d + "/memory.events", "oom_kill")) u.oom_kills = *kills;
  return u;
}

}  // namespace tessel::agent::cgroup_detail
