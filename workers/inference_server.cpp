#include "inference_server.h"

#include <httplib.h>

#include "generate_request.h"
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

// The code of an answer cpp-httplib made on its own (no handler ran, or it
// could not read the request): the ErrorCode whose status it is, or the kind.
ErrorCode code_of_httplib_status(int status) {
  switch (status) {
    case 404: return ErrorCode::not_found;
    case 413: return ErrorCode::payload_too_large;
    case 503: return ErrorCode::unavailable;
    default: return status >= 400 && status < 500 ? ErrorCode::invalid_argument : ErrorCode::internal;
  }
}

}  // namespace

InferenceServer::InferenceServer(InferenceSession& session, SamplingParams defaults)
    : session_(session), defaults_(defaults), http_(std::make_unique<httplib::Server>()) {
  http_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, 200,
          {{"status", "ok"},
           {"step", session_.step()},
           {"device", session_.device()},
           {"model", to_json(session_.config())}});
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
      Result<Completion> out = Error{""};
      {
        std::lock_guard lock(session_mutex_);
        out = session_.complete(request->prompt, request->params);
      }
      if (!out) return reply_error(res, out.error());
      reply(res, 200, {{"completion", out->text}, {"tokens", out->tokens}, {"prompt", request->prompt}});
    } catch (const std::exception& e) {
      reply_error(res, Error::internal(e.what()));
    }
  });
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    // httplib chose the status; keep it, and name the code that goes with it.
    if (res.body.empty())
      reply(res, res.status,
            error_body(Error{"HTTP " + std::to_string(res.status), code_of_httplib_status(res.status)}));
  });
}

InferenceServer::~InferenceServer() { stop(); }

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

void InferenceServer::stop() {
  if (http_) http_->stop();
}

}  // namespace tessel::workers
