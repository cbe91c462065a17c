#pragma once
// The agent's HTTP server for task logs (tessel::http on Boost.Asio: any number of
// readers and followers share one I/O thread):
//   GET /v1/tasks/<assignment_id>/logs?task=<local_rank>&offset=B&follow=true|false
// text/plain from byte `offset` of <state>/tasks/<id>/rank<task>.log, sent chunked,
// 64 KiB at a time. With follow, it streams until the task has ended and every byte
// is sent.
// When a token is set, requests need "Authorization: Bearer <token>" (401 otherwise).
// Errors are JSON {"error":{"code","message","field"}}.

#include <memory>
#include <string>

#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_manager.hpp"
#include "tessel/http/server.hpp"

namespace tessel::agent {

class LogServer {
 public:
  LogServer(const StateDir& dir, TaskManager& tasks, std::string token);
  ~LogServer();
  LogServer(const LogServer&) = delete;
  LogServer& operator=(const LogServer&) = delete;

  // Binds "host:port" (port 0: any free port) and serves on a background thread.
  // Returns the bound port. Call once.
  Result<int> start(const std::string& listen);
  void stop();

 private:
  void serve_log(http::Request& req, const http::Reply& reply);

  const StateDir& dir_;
  TaskManager& tasks_;
  std::string token_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace tessel::agent
