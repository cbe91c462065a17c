#pragma once
// The agent's HTTP server for task logs (tessel::http on Boost.Asio: any number of
// readers and followers share one I/O thread):
//   GET /v1/tasks/<assignment_id>/logs?task=<local_rank>&offset=B&follow=true|false
// text/plain from byte `offset` of <state>/tasks/<id>/rank<task>.log, sent chunked,
// 64 KiB at a time. With follow, it streams until the task has ended and every byte
// is sent.
// Only the scheduler reads here: requests need "Authorization: Bearer <key>" with the
// key the scheduler handed the agent at its last registration (401 otherwise; 503
// before the first registration). A node's own token or a user's is never enough.
// Errors are JSON {"error":{"code","message","field"}}.

#include <cstddef>
#include <memory>
#include <string>

#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_manager.hpp"
#include "tessel/http/server.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::agent {

class LogServer {
 public:
  LogServer(const StateDir& dir, TaskManager& tasks);
  ~LogServer();
  LogServer(const LogServer&) = delete;
  LogServer& operator=(const LogServer&) = delete;

  // Binds "host:port" (port 0: any free port) and serves on a background thread, at
  // most `max_connections` readers at once. Returns the bound port. Call once.
  Result<int> start(const std::string& listen, size_t max_connections = 4096);
  void stop();
  // The scheduler's credential from RegisterResponse::scheduler_key; replaces the last.
  void set_scheduler_key(std::string key) EXCLUDES(mu_);

 private:
  Status check_credential(const http::Request& req) const EXCLUDES(mu_);
  void serve_log(http::Request& req, const http::Reply& reply);

  const StateDir& dir_;
  TaskManager& tasks_;
  mutable Mutex mu_;
  std::string scheduler_key_ GUARDED_BY(mu_);
  std::unique_ptr<http::Server> server_;
};

}  // namespace tessel::agent
