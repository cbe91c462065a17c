#pragma once
// How a supervisor tells the agent, at once, that its task changed (its ranks started,
// or it wrote result.json): one datagram holding the assignment id, sent to an AF_UNIX
// SOCK_DGRAM socket in the agent's state dir (<state_dir>/events.sock).
// One more datagram says something no file can: "<id>\n<why>" when the supervisor
// could not write result.json (a full or read-only disk); the agent then reports the
// task's result as not recorded, with that reason (TaskManager::result_not_recorded).
//
// The datagram is only a hint: "read the state dir now". Files stay the truth, so
//  * a supervisor writes result.json durably BEFORE it sends, and the agent reads the
//    task's files only AFTER it received: what it reads then includes the result;
//  * a lost datagram costs only time: when the agent is down (ENOENT, ECONNREFUSED) it
//    reads every task when it starts and registers; when its queue is full (EAGAIN), the
//    datagrams already queued make it read the files, after this result was written;
//    and the agent rereads every task once per heartbeat interval anyway;
//  * a lost note ("<id>\n<why>") costs the reason: the agent then finds the supervisor
//    gone without a result, and says "result not recorded" with its own probe's reason
//    while the state dir still fails (TaskManager::probe_state_dir), else what it says
//    of any supervisor that died without a result.
// Anyone who may write to the socket file (its mode follows the state dir: root only)
// can make the agent read its state dir early, or report a task that has no result yet
// as not recorded; nothing more.

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::agent {

inline constexpr char kEventsSocketName[] = "events.sock";

// One datagram: the task that changed, and a note when its result could not be written.
struct TaskEvent {
  std::string id;
  std::string note;  // Empty, or why result.json could not be written.
  bool operator==(const TaskEvent&) const = default;
};

// <state_root>/events.sock.
std::string events_socket_path(const std::string& state_root);
// The same path for a task dir <state_root>/tasks/<id> (what a supervisor knows).
std::string events_socket_path_for_task(const std::string& task_dir);

// The socket address for `path`; an error when it does not fit sun_path (107 bytes).
Result<sockaddr_un> unix_socket_address(const std::string& path);

// Supervisor side. Never blocks and never fails the task: send() ignores an agent that
// is down or busy. Thread-compatible.
class TaskEventSender {
 public:
  // Logs once, here, when `socket_path` cannot be a socket address; send() then does nothing.
  explicit TaskEventSender(const std::string& socket_path);
  // `note` (cut to fit one datagram): see TaskEvent.
  void send(const std::string& assignment_id, const std::string& note = "") const;

 private:
  std::optional<sockaddr_un> addr_;
};

// Agent side: owns the bound socket; removes the socket file when destroyed (unless
// another agent bound a new one there since). wait() is for one thread; interrupt() may
// be called from any thread.
class TaskEventSocket {
 public:
  // Removes a stale socket file at `path` (a previous agent's), then binds it.
  static Result<std::unique_ptr<TaskEventSocket>> bind(const std::string& path);
  ~TaskEventSocket();
  TaskEventSocket(const TaskEventSocket&) = delete;
  TaskEventSocket& operator=(const TaskEventSocket&) = delete;

  // Blocks until datagrams arrive and returns all those queued (in arrival order), or
  // an empty list when `timeout` passes first; nullopt once interrupt() was called, or
  // if the socket failed (logged).
  std::optional<std::vector<TaskEvent>> wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Makes the current and every later wait() return nullopt.
  void interrupt();

 private:
  TaskEventSocket(int sock, int wake, std::string path, ino_t inode);
  std::vector<TaskEvent> drain();

  int sock_;
  int wake_;  // eventfd: readable once interrupt() was called.
  std::string path_;
  ino_t inode_;  // Of the socket file we bound: unlink only that one.
};

}  // namespace tessel::agent
