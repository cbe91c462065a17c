#pragma once
// The cgroup v2 way to refuse device nodes: a BPF_PROG_TYPE_CGROUP_DEVICE program,
// assembled here from the task's deny rules (as runc and crun assemble theirs) and
// attached to the task's cgroup with bpf(2). The kernel consults it on every open (and
// mknod) of a device file by a process in that cgroup, as well as any v1 devices
// controller. Needs CAP_SYS_ADMIN (or CAP_BPF); the attachment lives as long as the
// cgroup, so no descriptor is kept.

#include <cstdint>
#include <vector>

#include "tessel/agent/task_cgroup.hpp"

namespace tessel::agent {

// The program's instructions (struct bpf_insn, 8 bytes each): 0 (deny) for a device
// of `deny`, 1 (allow) for every other.
std::vector<uint64_t> device_program(const std::vector<DeviceRule>& deny);

// Loads the program for `deny` and attaches it to the cgroup directory `dir`
// (BPF_F_ALLOW_MULTI: programs of the cgroups above keep applying too).
Status attach_device_program(const std::string& dir, const std::vector<DeviceRule>& deny);

}  // namespace tessel::agent
