#pragma once
// The agent's state dir (default /var/lib/tessel-agent): tasks/<assignment_id>/ per
// task, with the files described in task_files.hpp. Survives agent restarts; the
// supervisor writes supervisor.json and result.json, the agent writes the rest.
// Also there: started.log (see record_started) and events.sock, the socket the agent
// binds while it runs so that supervisors can tell it about their tasks (task_events.hpp).
// A task without a `workdir` of its own runs in tasks/<id>/work (work_dir()), a directory
// the agent makes for it, owned by the job's user; it goes when the task dir goes.
// Modes: the root, tasks/ and each task dir are 0711 (a job's user reaches its own work
// dir by its absolute path, and lists none of them), work dirs 0700, files 0600.
// Thread-compatible: methods touch only files; callers serialise per task.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessel/agent/task_files.hpp"

namespace tessel::agent {

// An assignment id is used as a directory name and in URLs: 1..200 chars of
// [A-Za-z0-9._-], not "." or "..".
bool is_safe_task_id(const std::string& id);

struct TaskSnapshot {
  std::string id;
  api::Assignment assignment;
  std::optional<SupervisorRecord> supervisor;
  std::optional<TaskResult> result;
  bool acknowledged = false;
  bool launched = false;            // launch.json exists.
  int port = 0;                     // Rank 0's TESSEL_PORT, from launch.json.
  std::vector<int> cpus;            // Its cpuset, from launch.json; empty: none of its own.
  int64_t started_unix_ms = 0;      // mtime of assignment.json.
  std::optional<int> signals_done;  // From signals_done; absent (or unreadable): none.
  bool pulling_image = false;       // kPullingImageFile exists: its supervisor is pulling the image.
};

struct StateScan {
  std::vector<TaskSnapshot> tasks;    // Readable tasks.
  std::set<std::string> started_ids;  // Every task dir, readable or not.
  std::vector<std::string> problems;  // "tasks/x: result.json: ..." (skipped tasks).
};

class StateDir {
 public:
  explicit StateDir(std::string root) : root_(std::move(root)) {}

  Status init() const;  // Creates root/tasks; makes root and tasks/ 0711.
  const std::string& root() const { return root_; }
  std::string task_dir(const std::string& id) const { return root_ + "/tasks/" + id; }
  std::string log_path(const std::string& id, int local_rank) const {
    return task_dir(id) + "/rank" + std::to_string(local_rank) + ".log";
  }
  std::string work_dir(const std::string& id) const { return task_dir(id) + "/work"; }

  // Durably records that `a` is being started (one fdatasync'd line in
  // <root>/started.log, the authority on "never start twice"), then writes its
  // task dir. Fails when it was already recorded (conflict), for an unsafe id
  // (invalid_argument), and when the state dir cannot be written (unavailable).
  Status record_started(const api::Assignment& a) const;
  // Creates work_dir(id), mode 0700, owned by uid:gid (-1: the agent's own).
  Status make_work_dir(const std::string& id, int uid, int gid) const;
  Status write_launch(const LaunchPlan& p) const;
  Status write_result(const std::string& id, const TaskResult& r) const;
  Status mark_acknowledged(const std::string& id) const;
  // Records `id`'s last delivered user signal (task_files.hpp: signals_done).
  Status write_signals_done(const std::string& id, int signal_id) const;
  // Writes, fdatasyncs and removes a small file in the root: ok while the state dir
  // takes writes; else the bare errno text ("No space left on device").
  Status probe() const;

  // Reads one task; errors say which file is bad.
  Result<TaskSnapshot> load(const std::string& id) const;
  StateScan scan() const;
  // Deletes acknowledged task dirs whose assignment.json is older than `max_age_ms`.
  int remove_acknowledged_older_than(int64_t now_unix_ms, int64_t max_age_ms) const;

 private:
  std::string root_;
  std::string started_log() const { return root_ + "/started.log"; }
};

}  // namespace tessel::agent
