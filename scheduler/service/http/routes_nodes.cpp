// REST: /v1/nodes, /v1/nodes/{name}/labels, /v1/nodes/{name}/history, /v1/nodes/{name}/token, /v1/node-tokens,
// /v1/inventory.
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

json to_json(const NodeView& v) {
  json inv = api::to_json(v.rec.inventory);
  for (auto& d : inv["devices"]) {
    auto job = v.job_by_module.find(d["module_id"].get<int>());
    d["job"] = job == v.job_by_module.end() ? json(nullptr) : json(job->second);
  }
  json groups = json::object();
  for (const auto& [size, list] : v.free_groups) groups[std::to_string(size)] = list;
  json out = {{"name", v.rec.name},
              {"address", v.rec.address},
              {"agent_port", v.rec.agent_port},
              {"state", v.state},
              {"last_heartbeat", api::format_rfc3339(v.rec.last_heartbeat_ms)},
              {"inventory", inv},
              {"free_groups", groups}};
  out["labels"] = effective_labels(v.rec);
  out["admin_labels"] = v.rec.labels;
  json reservations = json::array();  // Not ended, by start (issue 32).
  for (const auto& r : v.reservations)
    reservations.push_back({{"name", r.name},
                            {"start", api::format_rfc3339(r.start_ms)},
                            {"end", api::format_rfc3339(r.end_ms)},
                            {"maintenance", r.maintenance}});
  out["reservations"] = reservations;
  if (!v.degraded.empty()) out["degraded"] = v.degraded;
  if (v.rec.inventory.cpus > 0) out["cpus_used"] = v.cpus_used;
  if (v.rec.inventory.memory_mib > 0) out["memory_used_mib"] = v.memory_used_mib;
  return out;
}

json to_json(const InventoryView& v) {
  json models = json::array();
  for (const auto& m : v.models) {
    json g = json::object();
    for (const auto& [size, count] : m.free_groups) g[std::to_string(size)] = count;
    models.push_back({{"model", m.model},
                      {"vendor", m.vendor},
                      {"cards", m.cards},
                      {"healthy", m.healthy},
                      {"free", m.free},
                      {"free_groups", g},
                      {"driver_versions", m.driver_versions},
                      {"firmware_versions", m.firmware_versions},
                      {"cards_ports_down", m.ports_down}});
  }
  return {{"models", models}, {"nodes", v.nodes_by_state}};
}

json reading(const std::optional<float>& v) { return v ? json(*v) : json(nullptr); }

// Samples as arrays in the order of "fields", so an hour of 8 cards stays small.
json history_json(const std::string& node, int64_t resolution_ms, const std::vector<CardHistory::Card>& cards) {
  json out_cards = json::array();
  for (const auto& c : cards) {
    json samples = json::array();
    for (const auto& s : c.samples)
      samples.push_back({api::format_rfc3339(s.at_ms), reading(s.utilization_pct), reading(s.memory_used_pct),
                         reading(s.temperature_c), reading(s.power_w)});
    out_cards.push_back({{"module_id", c.module_id}, {"samples", samples}});
  }
  return {{"node", node},
          {"resolution_s", resolution_ms / 1000},
          {"fields", {"time", "utilization_pct", "memory_used_pct", "temperature_c", "power_w"}},
          {"cards", out_cards}};
}

}  // namespace

void add_node_routes(http::Router& r, RouteContext& ctx) {
  r.add("GET", "/v1/nodes", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    json nodes = json::array();
    for (const auto& n : ctx.state.nodes()) nodes.push_back(to_json(n));
    reply(json_reply(200, {{"nodes", nodes}}));
  });
  r.add("GET", "/v1/nodes/{name}", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    auto node = ctx.state.node(req.captures[0]);
    if (!node) return reply(node.error());
    reply(json_reply(200, to_json(*node)));
  });
  r.add("GET", "/v1/nodes/{name}/history", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    auto cards = ctx.state.card_history(req.captures[0]);
    if (!cards) return reply(cards.error());
    reply(json_reply(200, history_json(req.captures[0], ctx.state.card_history_resolution_ms(), *cards)));
  });
  for (bool drain : {true, false}) {
    r.add(
        "POST", drain ? "/v1/nodes/{name}/drain" : "/v1/nodes/{name}/undrain",
        [&ctx, drain](http::Request& req, const http::Reply& reply) {
          if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
          auto node = ctx.state.set_drained(req.captures[0], drain);
          if (!node) return reply(node.error());
          reply(json_reply(200, to_json(*node)));
        },
        http::Exec::blocking);
  }
  r.add(
      "PUT", "/v1/nodes/{name}/labels",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto body = parse_body(req);
        if (!body) return reply(body.error());
        auto change = api::parse_label_change(*body);
        if (!change) return reply(change.error());
        auto node = ctx.state.set_node_labels(req.captures[0], *change);
        if (!node) return reply(node.error());
        reply(json_reply(200, to_json(*node)));
      },
      http::Exec::blocking);
  r.add(
      "DELETE", "/v1/nodes/{name}",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto node = ctx.state.remove_node(req.captures[0]);
        if (!node) return reply(node.error());
        reply(json_reply(200, to_json(*node)));
      },
      http::Exec::blocking);
  // An agent token bound to the node, shown in this answer only (the scheduler keeps
  // its SHA-256). Again: a new token, the old one refused from now on.
  r.add(
      "POST", "/v1/nodes/{name}/token",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        if (!ctx.auth.enabled())
          return reply(
              Error::conflict("authentication is off (no --tokens file): an issued token would not be "
                              "checked; start the scheduler with --tokens"));
        auto issued = ctx.state.node_tokens().issue(req.captures[0]);
        if (!issued) return reply(issued.error());
        http::Response res = json_reply(201, {{"node", issued->node},
                                              {"token", issued->token},
                                              {"issued_at", api::format_rfc3339(issued->issued_at_ms)},
                                              {"rotated", issued->rotated}});
        res.headers.push_back({"Cache-Control", "no-store"});
        reply(std::move(res));
      },
      http::Exec::blocking);
  r.add(
      "DELETE", "/v1/nodes/{name}/token",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto revoked = ctx.state.node_tokens().revoke(req.captures[0]);
        if (!revoked) return reply(revoked.error());
        ctx.state.token_revoked(req.captures[0], *revoked);
        reply(json_reply(200, {{"node", req.captures[0]}, {"revoked", true}}));
      },
      http::Exec::blocking);
  // Which nodes have an issued token, and since when: never the token or its hash.
  r.add("GET", "/v1/node-tokens", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
    json tokens = json::array();
    for (const auto& t : ctx.state.node_tokens().list())
      tokens.push_back({{"node", t.node}, {"issued_at", api::format_rfc3339(t.issued_at_ms)}});
    reply(json_reply(200, {{"tokens", std::move(tokens)}}));
  });
  r.add("GET", "/v1/inventory", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    reply(json_reply(200, to_json(ctx.state.inventory())));
  });
}

}  // namespace tessel::scheduler
