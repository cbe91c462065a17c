// REST: /v1/reservations (issue 32, part 4; admins only, reads included: the users and
// projects they admit are an admin's business), and the reservation rule of a submission.
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

// The stored form, and where the window stands at `now`: "pending", "active" or "ended".
json reservation_json(const api::Reservation& r, int64_t now) {
  json j = api::to_json(r);
  j["state"] = now < r.start_ms ? "pending" : (now < r.end_ms ? "active" : "ended");
  return j;
}

}  // namespace

Status check_submit_reservation(const RouteContext& ctx, const Principal& who, const api::JobSpec& spec) {
  return ctx.state.check_reservation_use(spec, who.name, who.role == Role::admin);
}

void add_reservation_routes(http::Router& r, RouteContext& ctx, const Clock& clock) {
  r.add("GET", "/v1/reservations", [&ctx, &clock](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
    const int64_t now = clock.now_ms();
    json list = json::array();
    for (const auto& v : ctx.state.reservations()) list.push_back(reservation_json(v, now));
    reply(json_reply(200, {{"reservations", list}}));
  });
  r.add("GET", "/v1/reservations/{name}", [&ctx, &clock](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
    auto v = ctx.state.reservation(req.captures[0]);
    if (!v) return reply(v.error());
    reply(json_reply(200, reservation_json(*v, clock.now_ms())));
  });
  r.add(
      "POST", "/v1/reservations",
      [&ctx, &clock](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::admin);
        if (!who) return reply(who.error());
        auto body = parse_body(req);
        if (!body) return reply(body.error());
        auto parsed = api::parse_reservation_request(*body, clock.now_ms());
        if (!parsed) return reply(parsed.error());
        auto made = ctx.state.create_reservation(std::move(*parsed), who->name);
        if (!made) return reply(made.error());
        reply(json_reply(201, reservation_json(*made, clock.now_ms())));
      },
      http::Exec::blocking);
  r.add(
      "DELETE", "/v1/reservations/{name}",
      [&ctx, &clock](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto gone = ctx.state.delete_reservation(req.captures[0]);
        if (!gone) return reply(gone.error());
        reply(json_reply(200, reservation_json(*gone, clock.now_ms())));
      },
      http::Exec::blocking);
}

}  // namespace tessel::scheduler
