#pragma once
// TaskManager: the agent's table of tasks, backed by the state dir.
// apply() turns a DesiredState into starts and stops (see reconcile.hpp);
// reports() refreshes each remembered task from disk and /proc.
// Thread-safe: one mutex (mu_) guards the table (GUARDED_BY, checked by clang);
// apply/reports/acknowledge may be called from different threads (long poll,
// reporter, heartbeat, HTTP).

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessel/time/clock.hpp"
#include "tessel/agent/container.hpp"
#include "tessel/agent/isolation.hpp"
#include "tessel/agent/launcher.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_env.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::agent {

struct RunAs {
  int uid = 0;
  int gid = 0;
  std::string user;
  std::string home;  // The user's home directory (HOME of its jobs).
};

struct TaskManagerConfig {
  std::string node;
  Env base_env;
  std::optional<RunAs> run_as;
  const Clock* clock = nullptr;  // Task start times, launch grace; null: the system clock.
  std::function<Result<int>()> reserve_port = reserve_free_port;
  std::function<bool(const SupervisorRecord&)> supervisor_alive;  // Default: /proc check.
  int64_t launch_grace_ms = 30000;                                // How long a supervisor may take to record itself.
  // Fences each task in a cgroup of its own (isolation.hpp); null: no isolation.
  const Isolation* isolation = nullptr;
  // Runs jobs' images (container.hpp); null: the node runs none, and a task with an
  // image fails to start saying so. dev_root and sysfs_root: where its cards' nodes are.
  const ContainerRuntime* containers = nullptr;
  std::string dev_root = "/dev";
  std::string sysfs_root = "/sys";
  int64_t log_cap_bytes = int64_t{1024} << 20;  // Per rank (--log-cap-mib); 0: no cap.
};

// Pure: the report for a task given what is on disk and whether its supervisor lives.
// `unrecorded`: why the task's result could not be written, when known; a task that
// ended without a result.json is then reported exited without an exit code, "result
// not recorded: <unrecorded>" (the scheduler fails it), not as a crashed supervisor.
api::TaskReport make_report(const TaskSnapshot& t, bool supervisor_alive, int64_t now_unix_ms, int64_t launch_grace_ms,
                            const std::string& unrecorded = "");

// Pure: the launch plan for an assignment (one RankLaunch per local rank), in the job's
// `workdir` or, without one, in the per-task StateDir::work_dir.
Result<LaunchPlan> make_launch_plan(const api::Assignment& a, const api::NodeInventory& inv, const StateDir& dir,
                                    const TaskManagerConfig& cfg, const std::vector<int>& ports);

class TaskManager {
 public:
  TaskManager(const StateDir& dir, TaskLauncher& launcher, TaskManagerConfig cfg);

  // Reads the state dir (after an agent restart); logs and skips corrupt tasks.
  void load() EXCLUDES(mu_);
  // Starts listed assignments never started and stops unlisted running tasks, and
  // delivers to running tasks the user signals their assignments list anew. A start
  // that fails (the state dir cannot be written, no port, the supervisor cannot be
  // started) is remembered as failed_to_start with the reason, so its report frees the
  // cards; in memory only when even that cannot be written.
  void apply(const api::DesiredState& desired, const api::NodeInventory& inv) EXCLUDES(mu_);
  // Reports for every task not yet acknowledged. A task whose supervisor died has what
  // is left in its cgroup killed first (with isolation): reported ended, it has ended.
  std::vector<api::TaskReport> reports() EXCLUDES(mu_);
  void acknowledge(const std::vector<std::string>& ids) EXCLUDES(mu_);
  int running_count() EXCLUDES(mu_);
  // Log access: whether the task is known, and whether all its processes ended.
  bool known(const std::string& id) EXCLUDES(mu_);
  bool finished(const std::string& id) EXCLUDES(mu_);
  // Writes a small file in the state dir (StateDir::probe) and returns why the node
  // cannot start tasks: "agent state dir: No space left on device", or "" when it can.
  std::string probe_state_dir() EXCLUDES(mu_);
  // The last probe's finding, or a launch's that found the state dir unwritable since.
  std::string state_dir_problem() const EXCLUDES(mu_);
  // Clears the cgroups of tasks whose supervisor is gone (Isolation::sweep), keeping
  // those of tasks still running or starting. Call after load().
  void sweep_cgroups() EXCLUDES(mu_);
  // Task `id`'s supervisor could not write its result (task_events.hpp), as its last act:
  // its ranks are gone, and it is reported so at once ("result not recorded: <why>").
  void result_not_recorded(const std::string& id, const std::string& why) EXCLUDES(mu_);

 private:
  struct Entry {
    TaskSnapshot snap;
    std::optional<int> launched_pid;
    bool kill_requested = false;
    std::string unrecorded;       // Why its supervisor could not write result.json.
    bool cgroup_cleared = false;  // Its supervisor died: what it left was killed.
    // The id of the last user signal (api::Assignment::signals) delivered to its ranks,
    // also in its state dir's signals_done file, so an agent that restarts delivers
    // those sent while it was down, and none twice. nullopt for a task loaded without
    // that file (an older agent's) until its assignment is next seen, which takes the
    // ids listed then as delivered.
    std::optional<int> signals_done;
    std::vector<api::JobSignal> signals;  // As its assignment last listed them.
  };
  // Takes `a`'s signals and delivers to `e`'s ranks, through its supervisor, those it has
  // not yet; flush_signals_locked() delivers them once its supervisor has recorded itself
  // (reports() calls it again).
  void deliver_signals_locked(const api::Assignment& a, Entry& e) REQUIRES(mu_);
  void flush_signals_locked(Entry& e) REQUIRES(mu_);
  void start_locked(const api::Assignment& a, const api::NodeInventory& inv) REQUIRES(mu_);
  // Reserves ports, makes the work dir and writes launch.json.
  // `taken`: the CPUs of running tasks (its cpuset is chosen among the others).
  Result<LaunchPlan> prepare_launch(const api::Assignment& a, const api::NodeInventory& inv,
                                    const std::set<int>& taken) const;
  std::set<int> taken_cpus_locked() const REQUIRES(mu_);
  void fail_start_locked(Entry e, const std::string& why) REQUIRES(mu_);
  api::TaskReport report_locked(Entry& e) REQUIRES(mu_);
  bool alive_locked(const Entry& e) const REQUIRES(mu_);
  void refresh_locked(Entry& e) REQUIRES(mu_);

  const StateDir& dir_;
  TaskLauncher& launcher_;
  TaskManagerConfig cfg_;
  const Clock& clock_;  // cfg_.clock or the system clock.
  mutable Mutex mu_;
  std::map<std::string, Entry> tasks_ GUARDED_BY(mu_);
  std::set<std::string> started_ GUARDED_BY(mu_);
  std::string state_dir_problem_ GUARDED_BY(mu_);  // From the last probe_state_dir().
};

}  // namespace tessel::agent
