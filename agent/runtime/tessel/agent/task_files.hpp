#pragma once
// The files of one task in the agent's state dir (<state>/tasks/<assignment_id>/):
//
//   assignment.json  the Assignment as received; written (fsync'd) BEFORE anything is
//                    launched: its presence means "started once, never start again".
//   launch.json      LaunchPlan: what the supervisor runs (argv, env, logs per rank).
//   supervisor.json  SupervisorRecord: pid + /proc starttime of the supervisor.
//   result.json      TaskResult, written once by the supervisor when all ranks ended.
//   acknowledged     marker: the scheduler stored the final report; stop reporting it.
//   signals_done     the id of the last user signal (api::Assignment::signals) sent to
//                    the ranks, as a decimal line; written before each delivery, so an
//                    agent that restarts delivers those sent while it was down, once.
//   pulling_image    marker: the supervisor is pulling the job's image (no rank started
//                    yet); the agent reports the task in phase api::kTaskPhasePullingImage.
//   rank<N>.log      stdout+stderr of local rank N (appended).
//
// Parsers take untrusted text (a file may be torn or edited) and never throw;
// errors name the field. All writes go through write_file_durable.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessel/agent/task_cgroup.hpp"
#include "tessel/api/agent_protocol.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

inline constexpr char kPullingImageFile[] = "pulling_image";  // See above.

struct RankLaunch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // The complete environment.
  std::string log_path;
  int port = 0;  // TESSEL_PORT.
  // The rank's share of its task's cpuset (one rank per card: nearest its card); empty:
  // all of the task's CPUs.
  std::vector<int> cpus;
  bool operator==(const RankLaunch&) const = default;
};

// A task whose ranks run in an image (issue 29): each rank's argv is already the whole
// `podman run` (container.hpp builds it); the supervisor uses this to have the image
// before any rank starts, and to remove the ranks' containers once they have ended.
struct ContainerPlan {
  // podman and the options before its subcommand: {"/usr/bin/podman", "--runtime",
  // "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}.
  std::vector<std::string> podman;
  std::string image;
  bool pull_always = false;        // Pull before every start; else only when absent.
  int64_t pull_timeout_s = 600;    // A pull past it is killed and fails the task.
  std::string authfile;            // podman's --authfile for the pull; "" none.
  std::vector<std::string> names;  // Each rank's container name, in rank order.
  bool operator==(const ContainerPlan&) const = default;
};

struct LaunchPlan {
  std::string assignment_id;
  std::string workdir;
  std::vector<RankLaunch> ranks;
  int64_t time_limit_s = 0;  // 0 = none.
  int64_t kill_grace_s = 10;
  std::optional<int> uid;  // Switch to this user (with gid + groups) when set.
  std::optional<int> gid;
  std::string user;  // For initgroups.
  // True for the job's own `workdir`: entered after switching to the job's user, so a
  // directory that user cannot reach fails the start. False for the per-task dir the
  // agent made for it (StateDir::work_dir), entered before (the state dir above it may
  // be closed to the user).
  bool workdir_as_user = true;
  // The task's cgroup (task_cgroup.hpp), when the agent isolates tasks.
  std::optional<TaskCgroup> cgroup;
  // Bytes a rank's log may hold; past it the supervisor cuts it back and drops the rest
  // of the output (log_cap.hpp). 0: no cap.
  int64_t log_cap_bytes = 0;
  // Set: the ranks run in containers (podman), started as root; uid and gid are then
  // unset and the job's user is podman's --user.
  std::optional<ContainerPlan> container;
  // The job's warning signal (api::WarningSignal): its number (0: none), sent to every
  // rank `warn_before_s` seconds before the time limit. Last: tests build plans by position.
  int warn_signal = 0;
  int64_t warn_before_s = 0;
  bool operator==(const LaunchPlan&) const = default;
};

struct SupervisorRecord {
  int pid = 0;
  uint64_t start_time = 0;  // Field 22 of /proc/<pid>/stat.
  bool operator==(const SupervisorRecord&) const = default;
};

struct TaskResult {
  api::TaskState state = api::TaskState::exited;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string message;
  // From the task's cgroup when it ended (nullopt without one).
  std::optional<double> cpu_seconds;
  std::optional<int64_t> max_rss_mib;
  std::vector<int> logs_capped;  // Local ranks whose output passed the log cap.
  bool operator==(const TaskResult&) const = default;
};

std::string serialize(const LaunchPlan& p);
std::string serialize(const SupervisorRecord& r);
std::string serialize(const TaskResult& r);
std::string serialize(const api::Assignment& a);

Result<LaunchPlan> parse_launch_plan(const std::string& text);
Result<SupervisorRecord> parse_supervisor_record(const std::string& text);
Result<TaskResult> parse_task_result(const std::string& text);
Result<api::Assignment> parse_assignment_file(const std::string& text);

}  // namespace tessel::agent
