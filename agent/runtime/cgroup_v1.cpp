// cgroup v1 (and the v1 controllers of a hybrid hierarchy): one directory per controller.
#include "tessel/api/inventory.hpp"
#include "tessel/agent/cgroup_files.hpp"
#include "tessel/agent/cgroup_versions.hpp"

namespace tessel::agent::cgroup_detail {

namespace {

const std::string* dir_of(const TaskCgroup& cg, const char* controller) {
  auto it = cg.dirs.find(controller);
  return it == cg.dirs.end() ? nullptr : &it->second;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A new v1 cpuset has no CPUs and no memory nodes: nothing can join it until both are set.
Status configure_cpuset(const TaskCgroup& cg, const std::string& dir) {
  const std::string parent = parent_of(dir);
  auto mems = read_cgroup_file(parent + "/cpuset.mems");
  if (!mems) return mems.error();
  if (auto st = write_cgroup_file(dir + "/cpuset.mems", trimmed(*mems)); !st) return st;
  std::string cpus;
  if (cg.cpus.empty()) {
    auto p = read_cgroup_file(parent + "/cpuset.cpus");
    if (!p) return p.error();
    cpus = trimmed(*p);
  } else {
    cpus = api::format_cpu_list(cg.cpus);
  }
  return write_cgroup_file(dir + "/cpuset.cpus", cpus);
}

Status configure_memory(const TaskCgroup& cg, const std::string& dir) {
  if (cg.memory_limit_mib <= 0) return ok_status();
  const std::string bytes = std::to_string(cg.memory_limit_mib * 1024 * 1024);
  if (auto st = write_cgroup_file(dir + "/memory.limit_in_bytes", bytes); !st) return st;
  // No swap past the limit, where the kernel accounts swap (swapaccount=1).
  if (path_exists(dir + "/memory.memsw.limit_in_bytes"))
    return write_cgroup_file(dir + "/memory.memsw.limit_in_bytes", bytes);
  return ok_status();
}

}  // namespace

Status configure_v1(const TaskCgroup& cg) {
  if (const auto* d = dir_of(cg, "cpuset"))
    if (auto st = configure_cpuset(cg, *d); !st) return st;
  if (const auto* d = dir_of(cg, "memory"))
    if (auto st = configure_memory(cg, *d); !st) return st;
  if (const auto* d = dir_of(cg, "devices"))
    for (const DeviceRule& r : cg.deny)
      if (auto st = write_cgroup_file(*d + "/devices.deny", v1_device_rule(r), /*append=*/true); !st) return st;
  if (const auto* d = dir_of(cg, "pids"); d && cg.pids_max > 0)
    if (auto st = write_cgroup_file(*d + "/pids.max", std::to_string(cg.pids_max)); !st) return st;
  return ok_status();
}

bool freeze_v1(const TaskCgroup& cg, bool frozen) {
  const auto* d = dir_of(cg, "freezer");
  if (!d) return false;
  return write_cgroup_file(*d + "/freezer.state", frozen ? "FROZEN" : "THAWED").ok();
}

TaskUsage usage_v1(const TaskCgroup& cg) {
  TaskUsage u;
  if (const auto* d = dir_of(cg, "cpuacct"))
    if (auto ns = read_cgroup_int(*d + "/cpuacct.usage")) u.cpu_seconds = static_cast<double>(*ns) / 1e9;
  if (const auto* d = dir_of(cg, "memory")) {
    const auto peak = read_cgroup_int(*d + "/memory.max_usage_in_bytes");
    if (peak) u.max_rss_mib = mib_rounded_up(*peak);
    // Its peak at the limit, or a charge the limit refused (memory.failcnt; with swap
    // accounted the memory+swap limit, as high, is charged first, and some kernels
    // count no failures there).
    const int64_t fails =
        read_cgroup_int(*d + "/memory.failcnt").value_or(0) + read_cgroup_int(*d + "/memory.memsw.failcnt").value_or(0);
    u.limit_hit = cg.memory_limit_mib > 0 && (fails > 0 || peak.value_or(0) >= cg.memory_limit_mib * 1024 * 1024);
    // oom_kill (kernel 4.13+), which v1 counts in the killed process's own cgroup only:
    // the task's and those below it still there (a container's, until its runtime
    // removes it). Before oom_kill, a limit that was hit is the best sign there is.
    if (auto kills = read_cgroup_key(*d + "/memory.oom_control", "oom_kill")) {
      u.oom_kills = *kills;
      for (const std::string& child : descendant_dirs(*d))
        u.oom_kills += read_cgroup_key(child + "/memory.oom_control", "oom_kill").value_or(0);
    } else if (u.limit_hit) {
      u.oom_kills = 1;
    }
  }
  return u;
}

}  // namespace tessel::agent::cgroup_detail
