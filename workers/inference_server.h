// InferenceServer: HTTP front end of an InferenceSession (cpp-httplib).
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models: the
//        OpenAI-compatible API (openai_api.h), "stream": true answers
//        server-sent events (text/event-stream).
//   POST /v1/generate {"prompt": str, "max_new_tokens"?, "temperature"?,
//                      "top_k"?, "seed"?} -> 200 {"completion", "tokens", ...}
//   GET  /healthz -> 200 {"status":"ok", "requests_active", "requests_waiting",
//        "requests_cancelled", "decode_steps", ...} once a session is attached,
//        503 {"status":"loading"} before.
// Errors of /v1/generate are {"error":{"code","message","field"?}}, those of the
// OpenAI endpoints {"error":{"message","type","param","code"}}; in both the code
// is the tessel::ErrorCode's name and the status comes from
// tessel::http_status_of() (bad input: 400 invalid_argument naming the field).
// Answers cpp-httplib makes on its own (unknown path 404, unreadable request
// 400, ...) keep httplib's status and get the matching code. No exception
// leaves a handler. Before attach() every generation endpoint answers 503.
//
// Threads: httplib runs handlers on its pool; they queue their prompts with
// InferenceSession::submit() (continuous batching: the session's decode loop,
// started by the caller with start_batching() before attach()) and read the
// tokens back. A full queue answers 429 with Retry-After. A streamed
// completion whose client has gone leaves the batch before the next step.
// stop() may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "inference_session.h"
#include "openai_api.h"
#include "sampling.h"
#include "tessel/base/result.hpp"

namespace httplib {
class Server;
struct Response;
}  // namespace httplib

namespace tessel::workers {

class InferenceServer {
 public:
  // `model_name` is the model id of the OpenAI API; `clock` gives `created`.
  InferenceServer(SamplingParams defaults, std::string model_name, const Clock& clock = system_clock());
  // Starts answering generation requests with `session`, which must outlive
  // the server. Until then /healthz answers 503.
  void attach(InferenceSession& session);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds host:port (port 0: any free port). Returns the bound port.
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(). Requires a successful bind().
  Status serve();
  bool running() const;  // serve() is accepting connections
  void stop();

 private:
  void add_openai_routes();
  void stream(httplib::Response& res, OpenAiRequest request, std::vector<std::shared_ptr<GenerationStream>> streams,
              const std::string& id, int64_t created);

  std::atomic<InferenceSession*> session_{nullptr};
  SamplingParams defaults_;
  std::string model_name_;
  const Clock& clock_;
  std::atomic<int64_t> next_id_{1};
  std::atomic<int64_t> cancelled_{0};  // streams ended early because the client went
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace tessel::workers
