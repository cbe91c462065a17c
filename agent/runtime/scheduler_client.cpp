#include "tessel/agent/scheduler_client.hpp"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tessel/agent/durable_file.hpp"

namespace tessel::agent {

using nlohmann::json;

SchedulerClient::SchedulerClient(const std::string& url, std::string token, bool keep_alive)
    : http_(std::make_unique<httplib::Client>(url)) {
  http_->set_connection_timeout(2, 0);
  http_->set_write_timeout(5, 0);
  http_->set_read_timeout(10, 0);
  http_->set_keep_alive(keep_alive);
  // httplib writes headers and body separately: without TCP_NODELAY each keep-alive
  // POST waits ~40 ms for a delayed ACK (bench/RESULTS.md, bench_load --nodelay).
  http_->set_tcp_nodelay(true);
  if (!token.empty()) http_->set_default_headers({{"Authorization", "Bearer " + token}});
}

SchedulerClient::~SchedulerClient() = default;

void SchedulerClient::cancel() { http_->stop(); }

template <class T, class Parse>
static Reply<T> finish(const httplib::Result& res, Parse parse) {
  Reply<T> out;
  if (!res) {
    out.error = "no answer: " + httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  json body = json::parse(res->body, nullptr, false);
  if (res->status / 100 != 2) {
    std::string msg = body.is_object() && body.contains("error") && body["error"].is_object()
                          ? body["error"].value("message", "")
                          : res->body.substr(0, 200);
    out.error = "HTTP " + std::to_string(res->status) + ": " + msg;
    return out;
  }
  if (body.is_discarded()) {
    out.status = 0;
    out.error = "answer is not JSON";
    return out;
  }
  auto v = parse(body);
  if (!v) {
    out.status = 0;
    out.error = v.error().message;
    return out;
  }
  out.value = std::move(*v);
  return out;
}

Reply<api::RegisterResponse> SchedulerClient::register_node(const api::RegisterRequest& req) {
  http_->set_read_timeout(10, 0);
  auto res = http_->Post("/v1/agent/register", api::to_json(req).dump(), "application/json");
  return finish<api::RegisterResponse>(res, api::register_response_from_json);
}

Reply<api::HeartbeatResponse> SchedulerClient::heartbeat(const api::HeartbeatRequest& req) {
  http_->set_read_timeout(10, 0);
  auto res = http_->Post("/v1/agent/heartbeat", api::to_json(req).dump(), "application/json");
  return finish<api::HeartbeatResponse>(res, api::heartbeat_response_from_json);
}

Reply<api::ReportResponse> SchedulerClient::report(const api::ReportRequest& req) {
  // The scheduler commits the reports (and frees the cards of ended jobs) before it
  // answers: a few ms usually, more on a busy cluster or a slow disk. Its scheduling
  // pass runs on its own thread and does not delay the answer.
  http_->set_read_timeout(10, 0);
  auto res = http_->Post("/v1/agent/report", api::to_json(req).dump(), "application/json");
  return finish<api::ReportResponse>(res, api::report_response_from_json);
}

Reply<api::DesiredState> SchedulerClient::desired_state(const std::string& node, int64_t version, int wait_s) {
  http_->set_read_timeout(wait_s + 10, 0);
  std::string path = "/v1/agent/nodes/" + node + "/assignments?version=" + std::to_string(version) +
                     "&wait_s=" + std::to_string(wait_s);
  auto res = http_->Get(path);
  return finish<api::DesiredState>(res, api::desired_state_from_json);
}

Result<std::string> read_token_file(const std::string& path) {
  auto text = read_small_file(path, 64 << 10);
  if (!text) return text.error().wrap("reading token file");
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    return line.substr(b, e - b + 1);
  }
  return Error{"reading token file: " + path + " holds no token"};
}

}  // namespace tessel::agent
