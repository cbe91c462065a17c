// REST: the agent protocol (role agent, each token bound to its node: may_act_for_node),
// exactly as api/tessel/api/agent_protocol.hpp documents it. Every answer carries this
// scheduler's epoch (RouteContext::epoch), which agents use to refuse an old leader.
#include <chrono>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

// Parses the body with `parse`, then answers with `call(request, token)`'s result.
template <class Parse, class Call>
http::Handler agent_post(RouteContext& ctx, Parse parse, Call call) {
  return [&ctx, parse, call](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::agent);
    if (!who) return reply(who.error());
    auto body = parse_body(req);
    if (!body) return reply(body.error());
    auto parsed = parse(*body);
    if (!parsed) return reply(parsed.error());  // invalid_argument, naming the field where it can.
    if (auto bound = may_act_for_node(*who, parsed->node); !bound) return reply(bound.error());
    auto out = call(*parsed, who->token);
    if (!out) return reply(out.error());
    out->epoch = ctx.epoch;
    reply(json_reply(200, api::to_json(*out)));
  };
}

}  // namespace

void add_agent_routes(http::Router& r, RouteContext& ctx) {
  // These commit (a node's first registration, a changed inventory, a finished
  // task): they run on the blocking pool.
  r.add(
      "POST", "/v1/agent/register",
      agent_post(ctx, api::register_request_from_json,
                 [&ctx](const api::RegisterRequest& q, const std::string& t) { return ctx.state.register_node(q, t); }),
      http::Exec::blocking);
  r.add("POST", "/v1/agent/heartbeat",
        agent_post(ctx, api::heartbeat_request_from_json,
                   [&ctx](const api::HeartbeatRequest& q, const std::string& t) { return ctx.state.heartbeat(q, t); }),
        http::Exec::blocking);
  r.add("POST", "/v1/agent/report",
        agent_post(ctx, api::report_request_from_json,
                   [&ctx](const api::ReportRequest& q, const std::string& t) { return ctx.state.report(q, t); }),
        http::Exec::blocking);

  // The long poll parks a callback (a Watch) and a timer; no thread waits.
  r.add("GET", "/v1/agent/nodes/{node}/assignments", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::agent);
    if (!who) return reply(who.error());
    if (auto bound = may_act_for_node(*who, req.captures[0]); !bound) return reply(bound.error());
    auto version = int_param(req, "version", 0, 0, INT64_MAX / 2);
    if (!version) return reply(version.error());
    auto wait_s = int_param(req, "wait_s", 30, 0, 60);
    if (!wait_s) return reply(wait_s.error());
    const std::string node = req.captures[0];
    auto id =
        ctx.state.watch_desired(node, *wait_s > 0 ? *version : -1, [reply, epoch = ctx.epoch](api::DesiredState d) {
          d.epoch = epoch;
          http::Response res = json_reply(200, api::to_json(d));
          // Told to come back later: close rather than keep an idle connection.
          res.close = d.poll_after_ms > 0;
          reply(std::move(res));
        });
    if (!id) return reply(id.error());
    if (*id == 0) return;  // Answered at once.
    ctx.server->after(std::chrono::seconds(*wait_s), [&ctx, node, id = *id] { ctx.state.expire_watch(node, id); });
  });
}

}  // namespace tessel::scheduler
