#include "inference_server.h"

#include <httplib.h>

#include "generate_request.h"

namespace tessel::workers {
namespace {

void reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_lossy(body), "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                 const std::string& field) {
  nlohmann::json err = {{"code", code}, {"message", message}};
  if (!field.empty()) err["field"] = field;
  reply(res, status, {{"error", err}});
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
      if (body.is_discarded()) return reply_error(res, 400, "invalid_argument", "body is not valid JSON", "");
      GenerateRequest request;
      if (auto e = parse_generate_request(body, defaults_, request))
        return reply_error(res, 400, "invalid_argument", (e->field.empty() ? "" : e->field + " ") + e->message,
                           e->field);
      Result<Completion> out = Error{""};
      {
        std::lock_guard lock(session_mutex_);
        out = session_.complete(request.prompt, request.params);
      }
      if (!out) return reply_error(res, 500, "internal", out.error().message, "");
      reply(res, 200, {{"completion", out->text}, {"tokens", out->tokens}, {"prompt", request.prompt}});
    } catch (const std::exception& e) {
      reply_error(res, 500, "internal", e.what(), "");
    }
  });
  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      reply_error(res, res.status, res.status == 404 ? "not_found" : "error", "HTTP " + std::to_string(res.status), "");
  });
}

InferenceServer::~InferenceServer() { stop(); }

Result<int> InferenceServer::bind(const std::string& host, int port) {
  if (port < 0 || port > 65535) return Error{"--port must be in [0, 65535], got " + std::to_string(port)};
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
  return {};
}

void InferenceServer::stop() {
  if (http_) http_->stop();
}

}  // namespace tessel::workers
