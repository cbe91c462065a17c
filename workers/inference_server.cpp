#include "inference_server.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "generate_request.h"
#include "openai_api.h"
#include "tessel/base/http_status.hpp"

namespace tessel::workers {

// What a request's Generation needs after its handler returned, kept alive by it:
// the counters /healthz shows and the way to the I/O threads (none once stopped).
struct InferenceServer::Shared {
  std::atomic<int64_t> cancelled{0};  // requests ended early because their client went

  // Runs `fn` on one of the server's I/O threads, unless the server stopped.
  void post(std::function<void()> fn) {
    MutexLock lock(mutex);
    if (server != nullptr && !stopped) server->after(std::chrono::milliseconds(0), std::move(fn));
  }
  uint64_t connections_open() {
    MutexLock lock(mutex);
    return server != nullptr && !stopped ? server->stats().connections_open : 0;
  }

  Mutex mutex;  // guards what follows
  http::Server* server GUARDED_BY(mutex) = nullptr;
  bool stopped GUARDED_BY(mutex) = false;
};

namespace {

using Json = nlohmann::json;

http::Response json_reply(int status, const Json& body) { return http::json_response(status, dump_lossy(body)); }

Json error_body(const Error& err) {
  Json e = {{"code", to_string(err.code)}, {"message", err.message}};
  if (!err.field.empty()) e["field"] = err.field;
  return {{"error", e}};
}

// Every error a handler answers goes through here, so through http_status_of().
http::Response tessel_error(const Error& err) { return json_reply(http_status_of(err.code), error_body(err)); }

http::Response openai_error_reply(const Error& err) {
  const int status = http_status_of(err.code);
  return json_reply(status, openai_error(err, status));
}

Error not_loaded() { return Error{"the model is still loading", ErrorCode::unavailable}; }

// 429 with Retry-After: the batch queue is full.
http::Response queue_full(const InferenceSession& session, bool openai) {
  const auto stats = session.batch_stats();
  const std::string message =
      "the request queue is full (" + std::to_string(stats.waiting) + " waiting); retry after the Retry-After seconds";
  http::Response r = openai ? json_reply(429, {{"error",
                                                {{"message", message},
                                                 {"type", "rate_limit_error"},
                                                 {"param", nullptr},
                                                 {"code", "rate_limit_exceeded"}}}})
                            : json_reply(429, {{"error", {{"code", "rate_limit_exceeded"}, {"message", message}}}});
  r.headers.push_back({"Retry-After", std::to_string(retry_after_s(stats.waiting, session.batch_limits()))});
  return r;
}

// Queues every prompt of a request; empty when the queue filled up (the ones
// already queued are cancelled).
Result<std::vector<std::shared_ptr<GenerationStream>>> submit_all(InferenceSession& session,
                                                                  const std::vector<std::string>& prompts,
                                                                  const SamplingParams& params) {
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (const auto& prompt : prompts) {
    auto stream = session.submit(prompt, params);
    if (!stream) {
      for (auto& s : streams) s->cancel();
      return stream.error();
    }
    if (!*stream) {
      for (auto& s : streams) s->cancel();
      return std::vector<std::shared_ptr<GenerationStream>>();
    }
    streams.push_back(std::move(*stream));
  }
  return streams;
}

// The longest prompt a request may have, and a 413 naming it.
int64_t prompt_limit(const ServeOptions& options, const InferenceSession& session) {
  return options.max_prompt_tokens > 0 ? options.max_prompt_tokens : session.config().context;
}
std::optional<Error> prompt_too_long(const std::vector<std::string>& prompts, int64_t limit, const std::string& field) {
  for (const auto& p : prompts) {
    if (static_cast<int64_t>(p.size()) > limit)
      return Error{"the prompt is " + std::to_string(p.size()) + " tokens; this server takes at most " +
                       std::to_string(limit) + " (--max-prompt-tokens)",
                   ErrorCode::payload_too_large, field};
  }
  return std::nullopt;
}

// Whether `a` equals `b`, in a time that does not depend on where they differ.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

enum class Kind {
  legacy,         // POST /v1/generate
  openai,         // an OpenAI completion, answered whole
  openai_stream,  // an OpenAI completion as server-sent events
};

// One request's way from the decode loop to its client, without a thread of its
// own: the decode loop wakes it after each token (GenerationStream's listener),
// and it takes the tokens and answers on an I/O thread. Choices are answered in
// order. A client that leaves (its socket watched by the HTTP server) cancels the
// request's streams, which leave the batch before the next step.
class Generation : public std::enable_shared_from_this<Generation> {
 public:
  struct Context {
    Kind kind = Kind::openai;
    OpenAiRequest request;  // kind openai and openai_stream
    std::string prompt;     // kind legacy
    std::string id, model;
    int64_t created = 0;
  };

  Generation(std::shared_ptr<InferenceServer::Shared> shared, Context context,
             std::vector<std::shared_ptr<GenerationStream>> streams, http::Reply reply)
      : shared_(std::move(shared)), ctx_(std::move(context)), streams_(std::move(streams)), reply_(std::move(reply)) {
    for (size_t i = 0; i < streams_.size(); ++i) matchers_.emplace_back(ctx_.request.stop);
  }

  void start() {
    for (auto& s : streams_) s->set_listener([self = shared_from_this()] { self->wake(); });
    if (ctx_.kind == Kind::openai_stream) {
      http::Response res;
      res.content_type = "text/event-stream";
      res.headers.push_back({"Cache-Control", "no-cache"});
      // A client gone before the stream starts: the producer is dropped unrun, and
      // the request ends with it.
      struct Unstarted {
        std::shared_ptr<Generation> generation;
        bool started = false;
        ~Unstarted() {
          if (!started && generation) generation->abandon();
        }
      };
      auto unstarted = std::make_shared<Unstarted>();
      unstarted->generation = shared_from_this();
      res.stream = [self = shared_from_this(), unstarted](std::shared_ptr<http::BodyStream> out) {
        unstarted->started = true;
        {
          MutexLock lock(self->mutex_);
          self->out_ = out;
        }
        out->on_close([self] { self->abandon(); });
        self->drain();
      };
      reply_(std::move(res));
    } else {
      reply_.on_client_gone([self = shared_from_this()] { self->abandon(); });
    }
    wake();
  }

 private:
  // Any thread (the decode loop's): drain() soon, on an I/O thread.
  void wake() {
    {
      MutexLock lock(mutex_);
      if (scheduled_ || ended_) return;
      scheduled_ = true;
    }
    shared_->post([self = shared_from_this()] { self->drain(); });
  }

  void drain() {
    MutexLock lock(mutex_);
    scheduled_ = false;
    if (ended_) return;
    if (ctx_.kind == Kind::openai_stream) return drain_stream(lock);
    while (current_ < streams_.size()) {
      GenerationStream& s = *streams_[current_];
      StopMatcher& m = matchers_[current_];
      while (auto token = s.try_next()) {
        ++tokens_;
        if (!m.push(static_cast<char>(*token))) {
          s.cancel();
          break;
        }
      }
      if (!m.stopped() && !s.done()) return;  // More to come: the next token wakes it.
      if (auto err = s.error(); err && !m.stopped()) {
        end(lock);
        reply_(ctx_.kind == Kind::legacy ? tessel_error(*err) : openai_error_reply(*err));
        return;
      }
      choices_.push_back(Choice{m.text(), m.stopped() ? "stop" : "length"});
      ++current_;
    }
    http::Response answer =
        ctx_.kind == Kind::legacy
            ? json_reply(200, {{"completion", choices_.front().text}, {"tokens", tokens_}, {"prompt", ctx_.prompt}})
            : json_reply(200, completion_response(ctx_.request, ctx_.id, ctx_.created, ctx_.model, choices_, tokens_));
    end(lock);
    reply_(std::move(answer));
  }

  // Server-sent events: what is ready goes out in one write; the next write waits
  // for that one (a slow client holds its tokens here, and the decode loop goes on).
  void drain_stream(MutexLock& lock) {
    if (!out_ || writing_) return;  // The stream's start, or the write's end, drains again.
    const OpenAiRequest& req = ctx_.request;
    std::string out;
    while (current_ < streams_.size()) {
      GenerationStream& s = *streams_[current_];
      StopMatcher& m = matchers_[current_];
      const auto index = static_cast<int64_t>(current_);
      while (auto token = s.try_next()) {
        const bool more = m.push(static_cast<char>(*token));
        std::string ready = m.take_ready();
        if (!ready.empty()) {
          out += sse_event(completion_chunk(req, ctx_.id, ctx_.created, ctx_.model, index, {ready, ""}, first_));
          first_ = false;
        }
        if (!more) {
          s.cancel();
          break;
        }
      }
      if (!m.stopped() && !s.done()) break;
      if (auto err = s.error(); err && !m.stopped()) {
        out += sse_event({{"error", openai_error(*err, http_status_of(err->code))["error"]}});
        current_ = streams_.size();
        break;
      }
      const Choice last{m.take_rest(), m.stopped() ? "stop" : "length"};
      out += sse_event(completion_chunk(req, ctx_.id, ctx_.created, ctx_.model, index, last, first_));
      first_ = true;
      ++current_;
    }
    const bool last = current_ == streams_.size();
    if (last) out += kSseDone;
    if (out.empty()) return;
    writing_ = true;
    auto stream = out_;
    lock.unlock();
    stream->write(std::move(out), [self = shared_from_this(), last](bool ok) { self->written(ok, last); });
  }

  void written(bool ok, bool last) {
    if (!ok) return abandon();
    MutexLock lock(mutex_);
    writing_ = false;
    if (!last) {
      lock.unlock();
      return drain();
    }
    auto stream = out_;
    end(lock);
    stream->finish();
  }

  // The client left (or the server stops): the request leaves the batch.
  void abandon() {
    MutexLock lock(mutex_);
    if (ended_) return;
    ++shared_->cancelled;
    end(lock);
  }

  // Ends the request (unlocks): its streams leave the batch, and stop waking it.
  void end(MutexLock& lock) {
    ended_ = true;
    lock.unlock();
    for (auto& s : streams_) {
      s->cancel();
      s->set_listener({});
    }
  }

  const std::shared_ptr<InferenceServer::Shared> shared_;
  const Context ctx_;
  const std::vector<std::shared_ptr<GenerationStream>> streams_;
  http::Reply reply_;
  Mutex mutex_;  // guards what follows
  std::vector<StopMatcher> matchers_ GUARDED_BY(mutex_);
  std::vector<Choice> choices_ GUARDED_BY(mutex_);
  size_t current_ GUARDED_BY(mutex_) = 0;  // the choice being taken
  int64_t tokens_ GUARDED_BY(mutex_) = 0;
  bool first_ GUARDED_BY(mutex_) = true;  // no chunk of the current choice sent yet
  bool scheduled_ GUARDED_BY(mutex_) = false;
  bool writing_ GUARDED_BY(mutex_) = false;
  bool ended_ GUARDED_BY(mutex_) = false;
  std::shared_ptr<http::BodyStream> out_ GUARDED_BY(mutex_);
};

}  // namespace

Result<std::string> read_api_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid("--api-key-file " + path + ": cannot open: " + std::strerror(errno), "api_key_file");
  std::stringstream text;
  text << in.rdbuf();
  std::string key = text.str();
  const auto first = key.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Error::invalid("--api-key-file " + path + ": holds no key", "api_key_file");
  key = key.substr(first, key.find_last_not_of(" \t\r\n") - first + 1);
  if (key.find_first_of(" \t\r\n") != std::string::npos)
    return Error::invalid("--api-key-file " + path + ": the key must be one word", "api_key_file");
  return key;
}

InferenceServer::InferenceServer(SamplingParams defaults, std::string model_name, ServeOptions options,
                                 const Clock& clock)
    : defaults_(defaults),
      model_name_(std::move(model_name)),
      options_(std::move(options)),
      clock_(clock),
      shared_(std::make_shared<Shared>()) {}

InferenceServer::~InferenceServer() { stop(); }

void InferenceServer::attach(InferenceSession& session) { session_.store(&session); }

void InferenceServer::add_routes(http::Router& router) {
  router.add("GET", "/healthz", [this](http::Request&, http::Reply reply) { health(std::move(reply)); });
  // Every other route needs the API key when there is one.
  router.add("GET", "/v1/models", guarded([this](http::Request&, http::Reply reply) {
               InferenceSession* session = session_.load();  // null while the model loads
               reply(json_reply(200, models_response(model_name_, clock_.now_ms() / 1000,
                                                     session ? session->precision() : std::string())));
             }));
  // Parses and queues (a large body's parse stays off the I/O threads); the answer
  // comes from the decode loop's tokens (Generation).
  router.add("POST", "/v1/generate",
             guarded([this](http::Request& req, http::Reply reply) { generate(req, std::move(reply)); }),
             http::Exec::blocking);
  router.add("POST", "/v1/completions",
             guarded([this](http::Request& req, http::Reply reply) { complete(req, std::move(reply), false); }),
             http::Exec::blocking);
  router.add("POST", "/v1/chat/completions",
             guarded([this](http::Request& req, http::Reply reply) { complete(req, std::move(reply), true); }),
             http::Exec::blocking);
}

// GET /healthz: 503 while the model loads, then the batch's state and the model.
void InferenceServer::health(http::Reply reply) {
  InferenceSession* session = session_.load();
  if (session == nullptr) return reply(json_reply(503, {{"status", "loading"}}));
  const auto stats = session->batch_stats();
  reply(json_reply(200, {{"status", "ok"},
                         {"requests_active", stats.active},
                         {"requests_waiting", stats.waiting},
                         {"requests_cancelled", shared_->cancelled.load()},
                         {"decode_steps", stats.steps},
                         {"max_batch", session->batch_limits().max_batch},
                         {"max_queue", session->batch_limits().max_queue},
                         {"max_prompt_tokens", prompt_limit(options_, *session)},
                         {"connections_open", shared_->connections_open()},
                         {"step", session->step()},
                         {"device", session->device()},
                         {"precision", session->precision()},
                         {"model", to_json(session->config())}}));
}

// True when the request may go on: no API key is set, or it sends "Authorization:
// Bearer <key>" (scheme in any case). Else answers 401 and returns false.
bool InferenceServer::authorized(http::Request& req, http::Reply& reply) {
  if (options_.api_key.empty()) return true;
  const std::string auth = req.header("Authorization");
  const std::string scheme = "Bearer ";
  const bool has_scheme =
      auth.size() > scheme.size() && std::equal(scheme.begin(), scheme.end(), auth.begin(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
      });
  if (!has_scheme || !same_secret(auth.substr(scheme.size()), options_.api_key)) {
    const Error err = Error::unauthenticated(
        auth.empty() ? "this server needs an API key: send Authorization: Bearer <key>" : "the API key is wrong");
    http::Response r = json_reply(401, {{"error",
                                         {{"message", err.message},
                                          {"type", "invalid_request_error"},
                                          {"param", nullptr},
                                          {"code", "invalid_api_key"}}}});
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    reply(std::move(r));
    return false;
  }
  return true;
}

// Wraps a handler: checks the API key first (401 without the right one), and answers
// 500 when the handler throws before it answered.
http::Handler InferenceServer::guarded(http::Handler handler) {
  return [this, handler = std::move(handler)](http::Request& req, http::Reply reply) {
    if (!authorized(req, reply)) return;
    try {
      handler(req, reply);
    } catch (const std::exception& e) {  // answers only if the handler has not
      reply(openai_error_reply(Error::internal(e.what())));
    }
  };
}

// POST /v1/generate (Tessel's own): one prompt, answered as {"completion": ...}.
void InferenceServer::generate(http::Request& req, http::Reply reply) {
  auto body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return reply(tessel_error(Error::invalid("body is not valid JSON")));
  auto request = parse_generate_request(body, defaults_);
  if (!request) {
    const Error& e = request.error();
    return reply(tessel_error(Error{field_message(e), e.code, e.field}));
  }
  InferenceSession* session = session_.load();
  if (session == nullptr) return reply(tessel_error(not_loaded()));
  if (auto err = prompt_too_long({request->prompt}, prompt_limit(options_, *session), "prompt"))
    return reply(tessel_error(*err));
  auto streams = submit_all(*session, {request->prompt}, request->params);
  if (!streams) return reply(tessel_error(streams.error()));
  if (streams->empty()) return reply(queue_full(*session, false));
  Generation::Context ctx;
  ctx.kind = Kind::legacy;
  ctx.prompt = std::move(request->prompt);
  std::make_shared<Generation>(shared_, std::move(ctx), std::move(*streams), std::move(reply))->start();
}

// POST /v1/completions and, with `chat`, /v1/chat/completions (OpenAI's), streamed or not.
void InferenceServer::complete(http::Request& req, http::Reply reply, bool chat) {
  auto body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return reply(openai_error_reply(Error::invalid("body is not valid JSON")));
  auto request = chat ? parse_chat_request(body, defaults_) : parse_completion_request(body, defaults_);
  if (!request) return reply(openai_error_reply(request.error()));
  if (!request->model.empty() && request->model != model_name_)
    return reply(
        openai_error_reply(Error{"the model " + request->model + " does not exist; this server has " + model_name_,
                                 ErrorCode::not_found, "model"}));
  InferenceSession* session = session_.load();
  if (session == nullptr) return reply(openai_error_reply(not_loaded()));
  if (auto err = prompt_too_long(request->prompts, prompt_limit(options_, *session), chat ? "messages" : "prompt"))
    return reply(openai_error_reply(*err));
  auto streams = submit_all(*session, request->prompts, request->params);
  if (!streams) return reply(openai_error_reply(streams.error()));
  if (streams->empty()) return reply(queue_full(*session, true));
  Generation::Context ctx;
  ctx.kind = request->stream ? Kind::openai_stream : Kind::openai;
  ctx.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++);
  ctx.created = clock_.now_ms() / 1000;
  ctx.model = model_name_;
  ctx.request = std::move(*request);
  std::make_shared<Generation>(shared_, std::move(ctx), std::move(*streams), std::move(reply))->start();
}

Result<int> InferenceServer::bind(const std::string& host, int port) {
  if (port < 0 || port > 65535)
    return Error::invalid("--port must be in [0, 65535], got " + std::to_string(port), "port");
  MutexLock lock(mutex_);
  if (http_) return Error{"already bound", ErrorCode::conflict};
  if (stopped_) return Error::unavailable("the server has stopped");
  http::Router router;
  add_routes(router);
  http::ServerOptions o;
  o.host = host;
  o.port = port;
  o.io_threads = options_.io_threads;
  o.blocking_threads = 4;  // parse and queue: never waits for tokens
  o.limits = options_.http;
  o.name = "tessel-infer";
  auto server = std::make_unique<http::Server>(o, std::move(router));
  auto bound = server->start();
  if (!bound) return bound.error();
  http_ = std::move(server);
  bound_ = true;
  MutexLock shared_lock(shared_->mutex);
  shared_->server = http_.get();
  return *bound;
}

Status InferenceServer::serve() {
  MutexLock lock(mutex_);
  if (!bound_) return Error{"serve() before a successful bind()", ErrorCode::conflict};
  stopped_cv_.wait(mutex_, [this]() REQUIRES(mutex_) { return stopped_; });
  return ok_status();
}

bool InferenceServer::running() const {
  MutexLock lock(mutex_);
  return bound_ && !stopped_;
}

void InferenceServer::stop() {
  {
    MutexLock lock(shared_->mutex);
    shared_->stopped = true;
  }
  {
    MutexLock lock(mutex_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
  // Closes every connection: their requests' generations are cancelled.
  if (http_) http_->stop();
}

}  // namespace tessel::workers
