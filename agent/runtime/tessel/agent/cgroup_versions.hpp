#pragma once
// The two hierarchies behind task_cgroup.hpp's functions (cgroup_v1.cpp, cgroup_v2.cpp).

#include "tessel/agent/task_cgroup.hpp"

namespace tessel::agent::cgroup_detail {

Status configure_v1(const TaskCgroup& cg);
Status configure_v2(const TaskCgroup& cg);
// Freezes (or thaws) the task so that it cannot fork while being killed; false when
// the hierarchy has no freezer for it.
bool freeze_v1(const TaskCgroup& cg, bool frozen);
bool freeze_v2(const TaskCgroup& cg, bool frozen);
// v2 cgroup.kill (kernel 5.14+): false when the kernel has none.
bool kill_v2(const TaskCgroup& cg);
TaskUsage usage_v1(const TaskCgroup& cg);
TaskUsage usage_v2(const TaskCgroup& cg);

// "/a/b" -> "/a": the parent directory.
std::string parent_of(const std::string& dir);
int64_t mib_rounded_up(int64_t bytes);

}  // namespace tessel::agent::cgroup_detail
