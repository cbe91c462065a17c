#pragma once
// TaskManager: the agent's table of tasks, backed by the state dir.
// apply() turns a DesiredState into starts and stops (see reconcile.hpp);
// reports() refreshes each remembered task from disk and /proc.
// Thread-safe: one mutex guards the table; apply/reports/acknowledge may be
// called from different threads (long poll, reporter, heartbeat, HTTP).

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessel/agent/launcher.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_env.hpp"

namespace tessel::agent {

struct RunAs {
  int uid = 0;
  int gid = 0;
  std::string user;
};

struct TaskManagerConfig {
  std::string node;
  Env base_env;
  std::optional<RunAs> run_as;
  std::function<int64_t()> now_unix_ms;  // Injected clock.
  std::function<Result<int>()> reserve_port = reserve_free_port;
  std::function<bool(const SupervisorRecord&)> supervisor_alive;  // Default: /proc check.
  int64_t launch_grace_ms = 30000;                                // How long a supervisor may take to record itself.
};

// Pure: the report for a task given what is on disk and whether its supervisor lives.
api::TaskReport make_report(const TaskSnapshot& t, bool supervisor_alive, int64_t now_unix_ms, int64_t launch_grace_ms);

// Pure: the launch plan for an assignment (one RankLaunch per local rank).
Result<LaunchPlan> make_launch_plan(const api::Assignment& a, const api::NodeInventory& inv, const StateDir& dir,
                                    const TaskManagerConfig& cfg, const std::vector<int>& ports);

class TaskManager {
 public:
  TaskManager(const StateDir& dir, TaskLauncher& launcher, TaskManagerConfig cfg);

  // Reads the state dir (after an agent restart); logs and skips corrupt tasks.
  void load();
  // Starts listed assignments never started and stops unlisted running tasks.
  void apply(const api::DesiredState& desired, const api::NodeInventory& inv);
  // Reports for every task not yet acknowledged.
  std::vector<api::TaskReport> reports();
  void acknowledge(const std::vector<std::string>& ids);
  int running_count();
  // Log access: whether the task is known, and whether all its processes ended.
  bool known(const std::string& id);
  bool finished(const std::string& id);

 private:
  struct Entry {
    TaskSnapshot snap;
    std::optional<int> launched_pid;
    bool kill_requested = false;
  };
  void start_locked(const api::Assignment& a, const api::NodeInventory& inv);
  bool alive_locked(const Entry& e) const;
  void refresh_locked(Entry& e);

  const StateDir& dir_;
  TaskLauncher& launcher_;
  TaskManagerConfig cfg_;
  std::mutex mu_;
  std::map<std::string, Entry> tasks_;  // Guarded by mu_.
  std::set<std::string> started_;       // Guarded by mu_.
};

}  // namespace tessel::agent
