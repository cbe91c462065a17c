#pragma once
// Starting and stopping supervisors. The interface lets tests inject a fake.
//
// DetachedLauncher runs `<tessel-supervisor> --task-dir DIR` fully detached:
// fork, setsid, fork again, exec; the middle process exits at once and is reaped,
// so the supervisor is reparented to init (or a subreaper), is in its own session,
// and survives SIGKILL of the agent. Its stdout/stderr go to DIR/supervisor.log.
// Inherited descriptors above 2 are closed in the child.

#include <string>

#include "tessel/agent/task_files.hpp"

namespace tessel::agent {

class TaskLauncher {
 public:
  virtual ~TaskLauncher() = default;
  // Starts the supervisor for a task dir holding launch.json; returns its pid.
  virtual Result<int> launch(const std::string& task_dir) = 0;
  // Asks a supervisor to stop its task (SIGTERM). Ok when it is already gone.
  virtual Status stop(const SupervisorRecord& sup) = 0;
  // Asks a supervisor to send `signo` (api::is_job_signal) to every rank of its task:
  // SIGRTMIN queued with the signal's number (sigqueue). Ok when it is already gone.
  virtual Status signal(const SupervisorRecord& sup, int signo) {
    (void)sup;
    (void)signo;
    return Error{"this launcher cannot signal tasks"};
  }
};

class DetachedLauncher final : public TaskLauncher {
 public:
  // `supervisor`: the path of the tessel-supervisor program.
  explicit DetachedLauncher(std::string supervisor) : supervisor_(std::move(supervisor)) {}
  Result<int> launch(const std::string& task_dir) override;
  Status stop(const SupervisorRecord& sup) override;
  Status signal(const SupervisorRecord& sup, int signo) override;

 private:
  std::string supervisor_;
};

// Binds port 0 on all interfaces, reads the port and closes: a port that was free.
Result<int> reserve_free_port();

}  // namespace tessel::agent
