#include "tessel/agent/run_as.hpp"

#include <pwd.h>

namespace tessel::agent {

Result<std::optional<RunAs>> resolve_run_as(const std::string& run_as, uid_t agent_euid, UserLookup lookup) {
  if (run_as.empty()) {
    if (agent_euid == 0)
      return Error::invalid(std::string("running as root, jobs would too: give --run-as USER (the package creates ") +
                                kDefaultJobsUser + "), or --run-as root to run them as root on purpose",
                            "--run-as");
    return std::optional<RunAs>{};
  }
  auto pw = lookup(run_as);
  if (!pw) return Error::invalid("--run-as: no user '" + run_as + "'", "--run-as");
  if (agent_euid == 0)
    return std::optional<RunAs>{RunAs{static_cast<int>(pw->uid), static_cast<int>(pw->gid), run_as, pw->home}};
  if (pw->uid != agent_euid)
    return Error::invalid("--run-as " + run_as + " needs the agent to run as root", "--run-as");
  return std::optional<RunAs>{};
}

std::optional<PasswdEntry> lookup_system_user(const std::string& name) {
  struct passwd pwd {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwnam_r(name.c_str(), &pwd, buf, sizeof buf, &found) != 0 || found == nullptr) return std::nullopt;
  return PasswdEntry{found->pw_uid, found->pw_gid, found->pw_dir ? found->pw_dir : ""};
}

}  // namespace tessel::agent
