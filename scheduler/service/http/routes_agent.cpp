// REST: the agent protocol (role agent, each token bound to its node: may_act_for_node),
// exactly as api/tessel/api/agent_protocol.hpp documents it. Every answer carries this
// scheduler's epoch (RouteContext::epoch), which agents use to refuse an old leader.
#include <chrono>
#include <type_traits>
#include <utility>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

// An agent's request: who sent it (its token) and what it asks.
template <class T>
struct AgentRequest {
  std::string token;
  T body;
};

// The request type a parser of the agent protocol returns.
template <class Parse>
using Parsed = std::decay_t<decltype(*std::declval<Parse>()(std::declval<const json&>()))>;

// Authorizes the request and parses its body with `parse`: the request, or the error
// to answer (invalid_argument naming the field where it can; forbidden for another
// node's token).
template <class Parse>
Result<AgentRequest<Parsed<Parse>>> read_agent_request(const RouteContext& ctx, const http::Request& req, Parse parse) {
  auto who = authorize(ctx, req, Action::agent);
  if (!who) return who.error();
  auto body = parse_body(req);
  if (!body) return body.error();
  auto parsed = parse(*body);
  if (!parsed) return parsed.error();
  if (auto bound = may_act_for_node(*who, parsed->node); !bound) return bound.error();
  return AgentRequest<Parsed<Parse>>{who->token, std::move(*parsed)};
}

// Answers with a result of the agent protocol, stamped with this scheduler's epoch.
template <class T>
void answer(const RouteContext& ctx, const http::Reply& reply, Result<T> out) {
  if (!out) return reply(out.error());
  out->epoch = ctx.epoch;
  reply(json_reply(200, api::to_json(*out)));
}

// Parses the body with `parse`, then answers with `call(request, token)`'s result.
template <class Parse, class Call>
http::Handler agent_post(RouteContext& ctx, Parse parse, Call call) {
  return [&ctx, parse, call](http::Request& req, const http::Reply& reply) {
    auto in = read_agent_request(ctx, req, parse);
    if (!in) return reply(in.error());
    answer(ctx, reply, call(in->body, in->token));
  };
}

}  // namespace

void add_agent_routes(http::Router& r, RouteContext& ctx) {
  // These commit (a node's first registration, a finished task): they run on the
  // blocking pool.
  r.add(
      "POST", "/v1/agent/register",
      agent_post(ctx, api::register_request_from_json,
                 [&ctx](const api::RegisterRequest& q, const std::string& t) { return ctx.state.register_node(q, t); }),
      http::Exec::blocking);
  // A heartbeat runs on the I/O thread while it changes telemetry only and finds the
  // state lock free (nearly all do, holding it for microseconds); one that must commit
  // (new cards or health, a node back up, a task list) or finds the lock busy moves to
  // the blocking pool. An I/O thread never waits for a commit or a scheduling pass.
  r.add("POST", "/v1/agent/heartbeat", [&ctx](http::Request& req, const http::Reply& reply) {
    auto in = read_agent_request(ctx, req, api::heartbeat_request_from_json);
    if (!in) return reply(in.error());
    if (auto done = ctx.state.heartbeat_in_place(in->body, in->token))
      return answer(ctx, reply, Result<api::HeartbeatResponse>(std::move(*done)));
    ctx.server->post_blocking(
        [&ctx, reply, in = std::move(*in)] { answer(ctx, reply, ctx.state.heartbeat(in.body, in.token)); });
  });
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
    auto done = [&ctx, reply, credential = req.header("Authorization")](const Result<api::DesiredState>& d) {
      if (!d) return reply(d.error());
      // Checked again as it is answered: a token revoked while the poll waited gets
      // no assignment (their env may carry secrets).
      if (auto still = ctx.auth.authorize(credential, Action::agent); !still) return reply(still.error());
      api::DesiredState state = *d;
      state.epoch = ctx.epoch;
      http::Response res = json_reply(200, api::to_json(state));
      // Told to come back later: close rather than keep an idle connection.
      res.close = state.poll_after_ms > 0;
      reply(std::move(res));
    };
    auto id = ctx.state.watch_desired(node, *wait_s > 0 ? *version : -1, std::move(done));
    if (!id) return reply(id.error());
    if (*id == 0) return;  // Answered at once.
    ctx.server->after(std::chrono::seconds(*wait_s), [&ctx, node, id = *id] { ctx.state.expire_watch(node, id); });
  });
}

}  // namespace tessel::scheduler
