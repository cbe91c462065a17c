// InferenceServer: HTTP front end of an InferenceSession, on Tessel's shared
// HTTP server (tessel::http::Server, Boost.Beast: the scheduler's and the
// agent's), with its limits.
//   POST /v1/completions, POST /v1/chat/completions, GET /v1/models: the
//        OpenAI-compatible API (openai_api.h), "stream": true answers
//        server-sent events (text/event-stream).
//   POST /v1/generate {"prompt": str, "max_new_tokens"?, "temperature"?,
//                      "top_k"?, "seed"?} -> 200 {"completion", "tokens", ...}
//   GET  /healthz -> 200 {"status":"ok", "requests_active", "requests_waiting",
//        "requests_cancelled", "decode_steps", ...} once a session is attached,
//        503 {"status":"loading"} before. Never needs the API key.
// Errors of /v1/generate are {"error":{"code","message","field"?}}, those of the
// OpenAI endpoints {"error":{"message","type","param","code"}}; in both the code
// is the tessel::ErrorCode's name and the status comes from
// tessel::http_status_of() (bad input: 400 invalid_argument naming the field).
// Answers the HTTP server makes on its own (unknown path 404, 405, a body past
// the limit 413, a head past it 431, a malformed request 400) are
// {"error":{"code","message"}}. No exception leaves a handler. Before attach()
// every generation endpoint answers 503.
//
// Limits (ServeOptions): the HTTP server's (head, body and idle timeouts, head
// and body size, open connections), the prompt's length in tokens (413 naming
// the limit), the batch queue (a full queue answers 429 with Retry-After), and
// an optional API key (a request without "Authorization: Bearer <key>" gets 401
// in the OpenAI shape; /healthz stays open).
//
// Threads: no request holds a thread while it is decoded. Handlers parse and
// queue their prompts with InferenceSession::submit() (continuous batching: the
// session's decode loop, started by the caller with start_batching() before
// attach()); the decode loop wakes the request after each token, and its
// answer is written from the server's I/O threads. A request whose client has
// gone (streamed or not: the server watches the socket) is cancelled and leaves
// the batch before the next step. A slow client costs a socket, never a thread:
// /healthz answers whatever the other clients do. stop() may be called from any
// thread but a handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "inference_session.h"
#include "sampling.h"
#include "tessel/base/result.hpp"
#include "tessel/http/server.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::workers {

struct ServeOptions {
  http::Limits http;  // timeouts, head and body bytes (413 past max_body_bytes), connections
  int io_threads = 2;
  // Longest prompt in tokens (bytes: the model is byte-level); past it 413.
  // 0: the model's context window.
  int64_t max_prompt_tokens = 0;
  // When set, every endpoint but /healthz needs "Authorization: Bearer <api_key>".
  std::string api_key;
};

// Reads an API key file: its text, without surrounding whitespace; an error
// naming the file when it cannot be read or holds no key.
Result<std::string> read_api_key_file(const std::string& path);

class InferenceServer {
 public:
  // `model_name` is the model id of the OpenAI API; `clock` gives `created`.
  InferenceServer(SamplingParams defaults, std::string model_name, ServeOptions options = {},
                  const Clock& clock = system_clock());
  // Starts answering generation requests with `session`, which must outlive
  // the server. Until then /healthz answers 503.
  void attach(InferenceSession& session);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds host:port (port 0: any free port) and starts answering. Returns the
  // bound port.
  Result<int> bind(const std::string& host, int port);
  // Waits until stop(). Requires a successful bind().
  Status serve();
  bool running() const;  // bound and not stopped
  void stop();

  struct Shared;  // What outlives a request's handler (inference_server.cpp).

 private:
  void add_routes(http::Router& router);
  // The routes' handlers (inference_server.cpp says what each answers).
  void health(http::Reply reply);
  bool authorized(http::Request& req, http::Reply& reply);
  http::Handler guarded(http::Handler handler);
  void generate(http::Request& req, http::Reply reply);
  void complete(http::Request& req, http::Reply reply, bool chat);

  std::atomic<InferenceSession*> session_{nullptr};
  SamplingParams defaults_;
  std::string model_name_;
  ServeOptions options_;
  const Clock& clock_;
  std::atomic<int64_t> next_id_{1};
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<http::Server> http_;
  mutable Mutex mutex_;  // guards what follows
  CondVar stopped_cv_;
  bool bound_ GUARDED_BY(mutex_) = false;
  bool stopped_ GUARDED_BY(mutex_) = false;
};

}  // namespace tessel::workers
