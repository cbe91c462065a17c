// REST: the agent protocol (role agent), exactly as api/tessel/api/agent_protocol.hpp documents it.
#include "tessel/api/agent_protocol.hpp"
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

void add_agent_routes(httplib::Server& srv, RouteContext& ctx) {
  srv.Post("/v1/agent/register", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto who = authorize(ctx, req, res, Action::agent);
    if (!who) return;
    auto body = parse_body(req, res);
    if (!body) return;
    auto r = api::register_request_from_json(*body);
    if (!r) return reply_error(res, ApiError::invalid(r.error().message));
    auto out = ctx.state.register_node(*r, who->token);
    if (auto* e = api_error(out)) return reply_error(res, *e);
    reply_json(res, 200, api::to_json(std::get<api::RegisterResponse>(out)));
  });

  srv.Post("/v1/agent/heartbeat", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto who = authorize(ctx, req, res, Action::agent);
    if (!who) return;
    auto body = parse_body(req, res);
    if (!body) return;
    auto r = api::heartbeat_request_from_json(*body);
    if (!r) return reply_error(res, ApiError::invalid(r.error().message));
    auto out = ctx.state.heartbeat(*r, who->token);
    if (auto* e = api_error(out)) return reply_error(res, *e);
    reply_json(res, 200, api::to_json(std::get<api::HeartbeatResponse>(out)));
  });

  srv.Get(R"(/v1/agent/nodes/([^/]+)/assignments)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::agent)) return;
    auto version = int_param(req, res, "version", 0, 0, INT64_MAX / 2);
    if (!version) return;
    auto wait_s = int_param(req, res, "wait_s", 30, 0, 60);
    if (!wait_s) return;
    auto out = ctx.state.wait_desired(req.matches[1], *version, *wait_s * 1000);
    if (auto* e = api_error(out)) return reply_error(res, *e);
    const auto& desired = std::get<api::DesiredState>(out);
    // Told to come back later: close, or the idle keep-alive connection would hold a thread.
    if (desired.poll_after_ms > 0) res.set_header("Connection", "close");
    reply_json(res, 200, api::to_json(desired));
  });
}

}  // namespace tessel::scheduler
