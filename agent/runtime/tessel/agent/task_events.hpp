#pragma once
// How a supervisor tells the agent, at once, that its task changed (its ranks started,
// or it wrote result.json): one datagram holding the assignment id, sent to an AF_UNIX
// SOCK_DGRAM socket in the agent's state dir (<state_dir>/events.sock).
//
// The datagram is only a hint: "read the state dir now". Files stay the truth, so
//  * a supervisor writes result.json durably BEFORE it sends, and the agent reads the
//    task's files only AFTER it received: what it reads then includes the result;
//  * a lost datagram costs only time: when the agent is down (ENOENT, ECONNREFUSED) it
//    reads every task when it starts and registers; when its queue is full (EAGAIN), the
//    datagrams already queued make it read the files, after this result was written;
//    and the agent rereads every task once per heartbeat interval anyway.
// Anyone who may write to the socket file (its mode follows the state dir: root only)
// can make the agent read its state dir early; nothing more.

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
  void send(const std::string& assignment_id) const;

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

  // Blocks until datagrams arrive and returns the assignment ids of all those queued
  // (in arrival order), or an empty list when `timeout` passes first; nullopt once
  // interrupt() was called, or if the socket failed (logged).
  std::optional<std::vector<std::string>> wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Makes the current and every later wait() return nullopt.
  void interrupt();

 private:
  TaskEventSocket(int sock, int wake, std::string path, ino_t inode);
  std::vector<std::string> drain();

  int sock_;
  int wake_;  // eventfd: readable once interrupt() was called.
  std::string path_;
  ino_t inode_;  // Of the socket file we bound: unlink only that one.
};

}  // namespace tessel::agent
