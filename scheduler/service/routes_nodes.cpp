// REST: /v1/nodes, /v1/inventory.
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

void add_node_routes(http::Router& r, RouteContext& ctx) {
  r.add("GET", "/v1/nodes", [&ctx](http::Request& req, http::Reply reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    reply(json_reply(200, ctx.state.nodes_json()));
  });
  r.add("GET", "/v1/nodes/{name}", [&ctx](http::Request& req, http::Reply reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    auto node = ctx.state.node_json(req.captures[0]);
    if (!node) return reply(node.error());
    reply(json_reply(200, *node));
  });
  for (bool drain : {true, false}) {
    r.add(
        "POST", drain ? "/v1/nodes/{name}/drain" : "/v1/nodes/{name}/undrain",
        [&ctx, drain](http::Request& req, http::Reply reply) {
          if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
          auto node = ctx.state.set_drained(req.captures[0], drain);
          if (!node) return reply(node.error());
          reply(json_reply(200, *node));
        },
        http::Exec::blocking);
  }
  r.add("GET", "/v1/inventory", [&ctx](http::Request& req, http::Reply reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    reply(json_reply(200, ctx.state.inventory_json()));
  });
}

}  // namespace tessel::scheduler
