// REST: /v1/nodes, /v1/inventory.
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

void add_node_routes(httplib::Server& srv, RouteContext& ctx) {
  srv.Get("/v1/nodes", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    reply_json(res, 200, ctx.state.nodes_json());
  });
  srv.Get(R"(/v1/nodes/([^/]+))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    auto r = ctx.state.node_json(req.matches[1]);
    if (auto* e = api_error(r)) return reply_error(res, *e);
    reply_json(res, 200, std::get<json>(r));
  });
  for (bool drain : {true, false}) {
    srv.Post(drain ? R"(/v1/nodes/([^/]+)/drain)" : R"(/v1/nodes/([^/]+)/undrain)",
             [&ctx, drain](const httplib::Request& req, httplib::Response& res) {
               if (!authorize(ctx, req, res, Action::admin)) return;
               auto r = ctx.state.set_drained(req.matches[1], drain);
               if (auto* e = api_error(r)) return reply_error(res, *e);
               reply_json(res, 200, std::get<json>(r));
             });
  }
  srv.Get("/v1/inventory", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    reply_json(res, 200, ctx.state.inventory_json());
  });
}

}  // namespace tessel::scheduler
