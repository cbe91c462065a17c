#pragma once
// The supervisor's side of a task in containers (issue 29, task_files.hpp's
// ContainerPlan): before any rank starts it makes sure the node has the image
// (ensure_image: `podman image exists`, and `podman pull` when absent or when the job
// asks image_pull "always", killed at the plan's timeout); once the ranks have ended
// it removes their containers (remove_containers: `podman rm --force`), whatever
// state they were left in (a rank's podman killed after a stop's grace leaves its
// container running). podman runs without a shell, its output appended to `log`.
// Called from the single-threaded supervisor only (it forks and waits).

#include <functional>
#include <map>
#include <string>

#include "tessel/agent/task_files.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// Ok when the image is there; else "pulling image REF: <podman's last line>" or
// "pulling image REF: timed out after N s". `on_pull` runs just before a pull starts
// (the supervisor says so in the ranks' logs, as Slurm's pyxis does).
Status ensure_image(const ContainerPlan& plan, const std::map<std::string, std::string>& env, const std::string& log,
                    const std::function<void()>& on_pull = {});
void remove_containers(const ContainerPlan& plan, const std::map<std::string, std::string>& env,
                       const std::string& log);

}  // namespace tessel::agent
