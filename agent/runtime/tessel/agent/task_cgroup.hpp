#pragma once
// A task's cgroup (issue 28): what the agent decides for it (TaskCgroup, in the task's
// launch.json) and what its supervisor does with it. One cgroup per task (all its
// ranks on the node), under the agent's subtree:
//   cgroup v1: one directory per controller (cpuset, memory, devices, pids, cpuacct,
//              freezer), e.g. /sys/fs/cgroup/memory/<agent's>/tessel/<assignment id>;
//   cgroup v2: one directory, e.g. /sys/fs/cgroup/<agent's>/tessel/<assignment id>.
// The supervisor creates and configures it (create_task_cgroup) before its ranks
// start; each rank joins it in the forked child before exec (join_task_cgroup), so
// nothing of the task ever runs outside it. When the ranks have ended (or after a
// stop's grace) it kills whatever is left (kill_task_cgroup: nothing escapes by setsid
// or double-forking), reads the task's use (read_task_usage) and removes it.
// The supervisor outlives agent restarts, and so does the cgroup it owns.
// Every function works on the paths given, so tests run them on a plain directory
// standing in for cgroupfs (writes create the files a kernel would have made).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::agent {

enum class CgroupVersion { v1, v2 };

// A v1 task's containers: podman runs them with `--cgroups no-conmon --cgroup-parent
// tessel-containers`, a relative parent, which runc resolves against its own cgroups:
// the task's, as it runs below the rank's podman. So each container's cgroup is
// <task's dir>/tessel-containers/libpod-<id> in each of the task's hierarchies (and
// <agent's cgroup>/tessel-containers/... in the others: cpu, blkio, name=systemd), and
// the task's limits, use, OOM kills and kill cover it.
inline constexpr char kContainerCgroupParent[] = "tessel-containers";
// A v2 task's containers: v2 lets no process sit in a cgroup that has children with
// controllers, so the task's own processes (the ranks' podman and conmon) join its leaf
// <task's dir>/ranks (TaskCgroup::leaf), and podman gets the task's dir as an absolute
// --cgroup-parent: each container's cgroup is <task's dir>/libpod-<id>, beside the leaf,
// and the task's limits, use, OOM kills (memory.events counts the subtree) and
// cgroup.kill cover it.
inline constexpr char kV2RanksLeaf[] = "ranks";

// A device the task must not open: type 'c' or 'b', and its numbers.
struct DeviceRule {
  char type = 'c';
  int64_t major = 0;
  int64_t minor = 0;
  bool operator==(const DeviceRule&) const = default;
};
// "c 240:3 rwm": the rule as the v1 devices controller takes it.
std::string v1_device_rule(const DeviceRule& r);

struct TaskCgroup {
  CgroupVersion version = CgroupVersion::v1;
  // v1: controller name -> the task's directory in that controller's hierarchy.
  // v2: "" -> its one directory.
  std::map<std::string, std::string> dirs;
  std::vector<int> cpus;         // Its cpuset, ascending; empty: the parent's CPUs.
  int64_t memory_limit_mib = 0;  // Hard limit, no swap past it; 0: none.
  int64_t pids_max = 0;          // 0: none.
  // The other cards' device nodes: opening one answers EPERM (v1: devices.deny; v2: a
  // device program, device_program.hpp).
  std::vector<DeviceRule> deny;
  // v2 only: the directory below dirs[""] that the task's processes join, its limits
  // written on dirs[""] and the controllers enabled for its children; "": they join
  // dirs[""] itself. Set for a task whose ranks run in containers (kV2RanksLeaf).
  std::string leaf;
  bool operator==(const TaskCgroup&) const = default;
};
// The controllers a v1 task cgroup has a directory in.
const std::vector<std::string>& v1_controllers();

nlohmann::json to_json(const TaskCgroup& cg);
Result<TaskCgroup> task_cgroup_from_json(const nlohmann::json& j);

// Makes the task's directories and writes its limits. On failure, removes what it made.
Status create_task_cgroup(const TaskCgroup& cg);
// Opens cgroup.procs of each directory (v2: of its leaf, when it has one) for the
// children to join (O_CLOEXEC): the caller closes them once its ranks have started.
Result<std::vector<int>> open_task_cgroup_procs(const TaskCgroup& cg);
// In a forked child before exec (async-signal-safe): moves the calling process into
// the task's cgroup. False when a write failed (errno tells why).
bool join_task_cgroup(const std::vector<int>& procs_fds);

// The pids in the task's cgroup and the cgroups below it (its containers') now (empty
// when its directory is gone).
std::vector<int> task_cgroup_pids(const TaskCgroup& cg);
// Kills every process in the task's cgroup, forks racing the kill included (v2
// cgroup.kill; else freeze, SIGKILL each, thaw, until none is left). Waits for them
// to leave it, at most `wait_ms`; an error when some are still there.
Status kill_task_cgroup(const TaskCgroup& cg, int wait_ms = 5000);

struct TaskUsage {
  std::optional<double> cpu_seconds;   // All its processes, user + system.
  std::optional<int64_t> max_rss_mib;  // Peak memory charged to it (rounded up).
  int64_t oom_kills = 0;               // Processes the kernel killed at its memory limit.
  // v1: its memory limit was reached at least once (memory.failcnt): reclaim, or an OOM
  // kill that v1 counted in a container's cgroup that is gone by now.
  bool limit_hit = false;
};
TaskUsage read_task_usage(const TaskCgroup& cg);

// Removes its directories, and the empty cgroups below them first (those its containers'
// runtime made and left); those already gone are fine.
Status remove_task_cgroup(const TaskCgroup& cg);

}  // namespace tessel::agent
