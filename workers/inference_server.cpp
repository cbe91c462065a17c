#include "inference_server.h"

#include <httplib.h>

#include "generate_request.h"
#include "openai_api.h"
#include "tessel/base/http_status.hpp"

namespace tessel::workers {
namespace {

void reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_lossy(body), "application/json");
}

nlohmann::json error_body(const Error& err) {
  nlohmann::json e = {{"code", to_string(err.code)}, {"message", err.message}};
  if (!err.field.empty()) e["field"] = err.field;
  return {{"error", e}};
}

// Every error a handler answers goes through here, so through http_status_of().
void reply_error(httplib::Response& res, const Error& err) { reply(res, http_status_of(err.code), error_body(err)); }

void reply_openai_error(httplib::Response& res, const Error& err) {
  const int status = http_status_of(err.code);
  reply(res, status, openai_error(err, status));
}

Error not_loaded() { return Error{"the model is still loading", ErrorCode::unavailable}; }

// 429 with Retry-After: the batch queue is full.
void reply_queue_full(httplib::Response& res, const InferenceSession& session, bool openai) {
  const auto stats = session.batch_stats();
  res.set_header("Retry-After", std::to_string(retry_after_s(stats.waiting, session.batch_limits())));
  const std::string message =
      "the request queue is full (" + std::to_string(stats.waiting) + " waiting); retry after the Retry-After seconds";
  if (openai) {
    reply(
        res, 429,
        {{"error",
          {{"message", message}, {"type", "rate_limit_error"}, {"param", nullptr}, {"code", "rate_limit_exceeded"}}}});
  } else {
    reply(res, 429, {{"error", {{"code", "rate_limit_exceeded"}, {"message", message}}}});
  }
}

// Queues every prompt of a request; null when the queue filled up (the ones
// already queued are cancelled).
Result<std::vector<std::shared_ptr<GenerationStream>>> submit_all(InferenceSession& session,
                                                                  const std::vector<std::string>& prompts,
                                                                  const SamplingParams& params) {
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (const auto& prompt : prompts) {
    auto stream = session.submit(prompt, params);
    if (!stream) return stream.error();
    if (!*stream) {
      for (auto& s : streams) s->cancel();
      return std::vector<std::shared_ptr<GenerationStream>>();
    }
    streams.push_back(std::move(*stream));
  }
  return streams;
}

// Reads a stream to its end or to a stop sequence (then cancels the rest).
Result<Choice> drain(GenerationStream& stream, StopMatcher& matcher, int64_t& tokens) {
  while (auto token = stream.next()) {
    ++tokens;
    if (!matcher.push(static_cast<char>(*token))) {
      stream.cancel();
      break;
    }
  }
  if (auto err = stream.error(); err && !matcher.stopped()) return *err;
  return Choice{matcher.text(), matcher.stopped() ? "stop" : "length"};
}

}  // namespace

InferenceServer::InferenceServer(SamplingParams defaults, std::string model_name, const Clock& clock)
    : defaults_(defaults),
      model_name_(std::move(model_name)),
      clock_(clock),
      http_(std::make_unique<httplib::Server>()) {
  http_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    InferenceSession* session = session_.load();
    if (session == nullptr) return reply(res, 503, {{"status", "loading"}});
    const auto stats = session->batch_stats();
    reply(res, 200,
          {{"status", "ok"},
           {"requests_active", stats.active},
           {"requests_waiting", stats.waiting},
           {"requests_cancelled", cancelled_.load()},
           {"decode_steps", stats.steps},
           {"max_batch", session->batch_limits().max_batch},
           {"max_queue", session->batch_limits().max_queue},
           {"step", session->step()},
           {"device", session->device()},
           {"model", to_json(session->config())}});
  });
  http_->Post("/v1/generate", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      auto body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) return reply_error(res, Error::invalid("body is not valid JSON"));
      auto request = parse_generate_request(body, defaults_);
      if (!request) {
        const Error& e = request.error();
        return reply_error(res, Error{field_message(e), e.code, e.field});
      }
      InferenceSession* session = session_.load();
      if (session == nullptr) return reply_error(res, not_loaded());
      auto streams = submit_all(*session, {request->prompt}, request->params);
      if (!streams) return reply_error(res, streams.error());
      if (streams->empty()) return reply_queue_full(res, *session, false);
      StopMatcher matcher({});
      int64_t tokens = 0;
      auto out = drain(*streams->front(), matcher, tokens);
      if (!out) return reply_error(res, out.error());
      reply(res, 200, {{"completion", out->text}, {"tokens", tokens}, {"prompt", request->prompt}});
    } catch (const std::exception& e) {
      reply_error(res, Error::internal(e.what()));
    }
  });
  add_openai_routes();
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    // httplib chose the status; keep it, and name the code that goes with it.
    if (res.body.empty())
      reply(res, res.status,
            error_body(Error{"HTTP " + std::to_string(res.status), error_code_of_library_status(res.status)}));
  });
}

InferenceServer::~InferenceServer() { stop(); }

void InferenceServer::attach(InferenceSession& session) { session_.store(&session); }

void InferenceServer::add_openai_routes() {
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, models_response(model_name_, clock_.now_ms() / 1000));
  });
  auto handle = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      try {
        auto body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
        if (body.is_discarded()) return reply_openai_error(res, Error::invalid("body is not valid JSON"));
        auto request = chat ? parse_chat_request(body, defaults_) : parse_completion_request(body, defaults_);
        if (!request) return reply_openai_error(res, request.error());
        if (!request->model.empty() && request->model != model_name_)
          return reply_openai_error(
              res, Error{"the model " + request->model + " does not exist; this server has " + model_name_,
                         ErrorCode::not_found, "model"});
        InferenceSession* session = session_.load();
        if (session == nullptr) return reply_openai_error(res, not_loaded());
        auto streams = submit_all(*session, request->prompts, request->params);
        if (!streams) return reply_openai_error(res, streams.error());
        if (streams->empty()) return reply_queue_full(res, *session, true);
        const std::string id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++);
        const int64_t created = clock_.now_ms() / 1000;
        if (request->stream) return stream(res, std::move(*request), std::move(*streams), id, created);
        std::vector<Choice> choices;
        int64_t tokens = 0;
        for (auto& s : *streams) {
          StopMatcher matcher(request->stop);
          auto choice = drain(*s, matcher, tokens);
          if (!choice) {
            for (auto& other : *streams) other->cancel();
            return reply_openai_error(res, choice.error());
          }
          choices.push_back(std::move(*choice));
        }
        reply(res, 200, completion_response(*request, id, created, model_name_, choices, tokens));
      } catch (const std::exception& e) {
        reply_openai_error(res, Error::internal(e.what()));
      }
    };
  };
  http_->Post("/v1/completions", handle(false));
  http_->Post("/v1/chat/completions", handle(true));
}

void InferenceServer::stream(httplib::Response& res, OpenAiRequest request,
                             std::vector<std::shared_ptr<GenerationStream>> streams, const std::string& id,
                             int64_t created) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  struct State {
    OpenAiRequest request;
    std::vector<std::shared_ptr<GenerationStream>> streams;
  };
  auto state = std::make_shared<State>(State{std::move(request), std::move(streams)});
  auto provider = [this, state, id, created](size_t, httplib::DataSink& sink) {
    const OpenAiRequest& req = state->request;
    auto send = [&](const nlohmann::json& chunk) {
      const std::string event = sse_event(chunk);
      return sink.is_writable() && sink.write(event.data(), event.size());
    };
    auto hang_up = [&] {  // the client has gone: its requests leave the batch
      for (auto& s : state->streams) s->cancel();
      ++cancelled_;
      return false;
    };
    for (size_t i = 0; i < state->streams.size(); ++i) {
      GenerationStream& stream = *state->streams[i];
      const auto index = static_cast<int64_t>(i);
      StopMatcher matcher(req.stop);
      bool first = true;
      while (auto token = stream.next()) {
        const bool more = matcher.push(static_cast<char>(*token));
        std::string ready = matcher.take_ready();
        if (!ready.empty()) {
          if (!send(completion_chunk(req, id, created, model_name_, index, {ready, ""}, first))) return hang_up();
          first = false;
        }
        if (!more) {
          stream.cancel();
          break;
        }
      }
      if (auto err = stream.error(); err && !matcher.stopped()) {
        send({{"error", openai_error(*err, http_status_of(err->code))["error"]}});
        break;
      }
      const Choice last{matcher.take_rest(), matcher.stopped() ? "stop" : "length"};
      if (!send(completion_chunk(req, id, created, model_name_, index, last, first))) return hang_up();
    }
    if (!sink.write(kSseDone.data(), kSseDone.size())) return hang_up();
    sink.done();
    return true;
  };
  // Also when httplib ends the response without asking the provider again.
  auto release = [state](bool) {
    for (auto& s : state->streams) s->cancel();
  };
  res.set_chunked_content_provider("text/event-stream", provider, release);
}

Result<int> InferenceServer::bind(const std::string& host, int port) {
  if (port < 0 || port > 65535)
    return Error::invalid("--port must be in [0, 65535], got " + std::to_string(port), "port");
  if (port == 0) {
    int bound = http_->bind_to_any_port(host);
    if (bound <= 0) return Error{"cannot bind " + host + " to any port"};
    return bound;
  }
  if (!http_->bind_to_port(host, port)) return Error{"cannot bind " + host + ":" + std::to_string(port)};
  return port;
}

Status InferenceServer::serve() {
  if (!http_->listen_after_bind()) return Error{"HTTP server stopped with an error"};
  return ok_status();
}

bool InferenceServer::running() const { return http_->is_running(); }

void InferenceServer::stop() {
  if (http_) http_->stop();
}

}  // namespace tessel::workers
