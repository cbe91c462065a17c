// InferenceServer: HTTP front end of an InferenceSession (cpp-httplib).
//   POST /v1/generate {"prompt": str, "max_new_tokens"?, "temperature"?,
//                      "top_k"?, "seed"?} -> 200 {"completion", "tokens", ...}
//   GET  /healthz -> 200 {"status":"ok", ...}
// An error is answered {"error":{"code","message","field"?}}: the code is the
// tessel::ErrorCode's name and the status comes from tessel::http_status_of() (bad
// input: 400 invalid_argument naming the field). Answers cpp-httplib makes on
// its own (unknown path 404, unreadable request 400, ...) keep httplib's status
// and get the matching code. No exception leaves a handler.
//
// Threads: httplib runs handlers on its pool; generation is serialised by one
// mutex that owns the session. stop() may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "inference_session.h"
#include "sampling.h"
#include "tessel/base/result.hpp"

namespace httplib {
class Server;
}

namespace tessel::workers {

class InferenceServer {
 public:
  // `session` must outlive the server.
  InferenceServer(InferenceSession& session, SamplingParams defaults);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds host:port (port 0: any free port). Returns the bound port.
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(). Requires a successful bind().
  Status serve();
  void stop();

 private:
  InferenceSession& session_;
  SamplingParams defaults_;
  std::mutex session_mutex_;  // guards session_
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace tessel::workers
