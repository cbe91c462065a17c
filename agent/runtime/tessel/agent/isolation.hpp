#pragma once
// The agent's side of task isolation (issue 28): at start it finds the cgroup
// hierarchy and makes its subtree (open()); for each task it decides the task's cgroup
// (plan(): its directories, CPUs, memory limit, pids limit, the other cards' device
// rules), which the task's supervisor then creates, joins and removes
// (task_cgroup.hpp). After a restart it leaves the cgroups of running tasks alone and
// clears those whose supervisor is gone (sweep()).
//
// Hierarchies, with <root> the --cgroup-root and <own> the agent's cgroup from
// /proc/self/cgroup:
//   cgroup1 (v1 or hybrid: controllers mounted as <root>/<controller>): the subtree is
//     <root>/<controller><own>/<subtree> for cpuset, memory, devices, pids, cpuacct and
//     freezer (cpuset levels get their parent's CPUs and memory nodes);
//   cgroup2 (<root> is a cgroup2 mount): <root><own>/<subtree>. The agent first moves
//     the processes of <own> into the leaf <root><own>/agent ("no internal processes":
//     controllers can be enabled for children only in a cgroup without processes),
//     then enables cpuset, memory, pids and cpu in <own> and the subtree. Under systemd
//     that needs Delegate=yes in the unit. Device rules are a BPF program attached to
//     each task's cgroup (device_program.hpp); open() tries one.
// Thread-safety: const after open(); plan() and sweep() may run on any thread.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessel/agent/host_shape.hpp"
#include "tessel/agent/task_cgroup.hpp"
#include "tessel/api/agent_protocol.hpp"

namespace tessel::agent {

struct IsolationConfig {
  std::string mode = "auto";  // auto | cgroup1 | cgroup2 | none.
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string subtree = "tessel";  // The agent's directory for its tasks' cgroups.
  std::string dev_root = "/dev";
  std::string sysfs_root = "/sys";
  int64_t pids_max = 32768;  // Per task; 0: no limit.
  std::string self_cgroup;   // /proc/self/cgroup's text (tests give their own).
  int self_pid = 0;          // Moved into the v2 leaf; 0: not moved (tests).
  // v2: open() attaches a device program to a trial cgroup (false: tests on a
  // directory standing in for cgroupfs, where bpf(2) has no cgroup to attach to).
  bool try_device_program = true;
};

class Isolation {
 public:
  // Detects (mode auto) or checks the hierarchy and makes the subtree, trying a task
  // cgroup in it. An error says why tasks cannot be fenced: the agent refuses to start.
  // Mode none: no cgroups, kind() "none".
  static Result<std::unique_ptr<Isolation>> open(const IsolationConfig& cfg, HostShape host);

  // "cgroup1", "cgroup2" or "none" (the inventory's isolation).
  const std::string& kind() const { return kind_; }
  bool enabled() const { return kind_ != "none"; }
  const HostShape& host() const { return host_; }
  // Where a task's cgroup goes: controller -> directory ("" for v2's one).
  std::map<std::string, std::string> task_dirs(const std::string& assignment_id) const;

  // The task's cgroup (nullopt when isolation is off). `taken`: CPUs of running tasks.
  // An error when its CPUs cannot be had ("4 CPUs asked, 2 of the node's 8 are free").
  Result<std::optional<TaskCgroup>> plan(const api::Assignment& a, const api::NodeInventory& inv,
                                         const std::set<int>& taken) const;
  // Kills what is left in, and removes, every task cgroup of the subtree whose id is
  // not in `keep` (tasks whose supervisor still runs); returns the ids cleared.
  std::vector<std::string> sweep(const std::set<std::string>& keep) const;
  // Kills what is left in task `assignment_id`'s cgroup and removes it (its supervisor
  // is gone). Ok when there is none.
  Status clear(const std::string& assignment_id) const;

 private:
  Isolation(IsolationConfig cfg, HostShape host, std::string kind, std::map<std::string, std::string> bases)
      : cfg_(std::move(cfg)), host_(std::move(host)), kind_(std::move(kind)), bases_(std::move(bases)) {}

  const IsolationConfig cfg_;
  const HostShape host_;
  const std::string kind_;
  // The subtree: controller -> its directory ("" for v2); empty when off.
  const std::map<std::string, std::string> bases_;
};

// /proc/self/cgroup's path of `controller` ("" for the v2 line "0::"), or nullopt.
std::optional<std::string> own_cgroup_path(const std::string& self_cgroup, const std::string& controller);

}  // namespace tessel::agent
