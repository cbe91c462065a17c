#pragma once
// Which user the agent's jobs run as (--run-as), and the safe default: an agent
// running as root refuses to start until it is told which user its jobs get, so
// a job spec can never run as root by accident. `--run-as root` says so on purpose.

#include <sys/types.h>

#include <optional>
#include <string>

#include "tessel/agent/task_manager.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// The user the package creates for jobs (packaging/debian/agent/postinst).
inline constexpr const char* kDefaultJobsUser = "tessel-jobs";

// What to switch to before exec for `run_as` (the --run-as value, empty when not
// given) in an agent whose effective uid is `agent_euid`:
// - nullopt: jobs run as the agent's own user (not root, and --run-as was empty or names it);
// - a RunAs: the agent is root and switches to that user (root included, when asked);
// - an error with the one-line reason: root without --run-as, an unknown user, or a
//   user other than its own for an agent that is not root.
// `lookup` finds a user by name (getpwnam in the program; tests pass a table).
struct PasswdEntry {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};
using UserLookup = std::optional<PasswdEntry> (*)(const std::string& name);
Result<std::optional<RunAs>> resolve_run_as(const std::string& run_as, uid_t agent_euid, UserLookup lookup);

// getpwnam(3), as a UserLookup.
std::optional<PasswdEntry> lookup_system_user(const std::string& name);

}  // namespace tessel::agent
