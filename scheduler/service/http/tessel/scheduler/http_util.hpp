#pragma once
// The REST layer's shared helpers: JSON replies, authorization and strict
// parsing of bodies and query parameters. Every failure is a tessel::Error that
// the handler hands to its Reply, which renders {"error":{"code","message","field"?}}
// with the matching status (http::error_response): nothing throws.

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tessel/http/server.hpp"
#include "tessel/scheduler/auth.hpp"
#include "tessel/scheduler/state.hpp"
#include "tessel/scheduler/stream_slots.hpp"

namespace tessel::scheduler {

class EventHub;

// What route handlers share. Outlives the server.
struct RouteContext {
  ClusterState& state;
  const Authenticator& auth;
  http::Server* server = nullptr;  // Set once the server exists (timers, log forwarding).
  EventHub* events = nullptr;      // Set once the server exists (GET /v1/events).
  int64_t epoch = 0;               // The leader lease's epoch, 0 without replicas (ServiceOptions::epoch).
  // Followed log streams (GET /v1/jobs/{id}/logs?follow=true) per user; null: no cap.
  std::shared_ptr<StreamSlots> follow_slots;
};

http::Response json_reply(int status, const nlohmann::json& body);

// The principal behind the request's bearer token, if it may do `action`.
Result<Principal> authorize(const RouteContext& ctx, const http::Request& req, Action action);

// The body as a JSON object.
Result<nlohmann::json> parse_body(const http::Request& req);

// A non-negative decimal query parameter in min..max; `fallback` when absent.
Result<int64_t> int_param(const http::Request& req, const std::string& name, int64_t fallback, int64_t min,
                          int64_t max);

void add_job_routes(http::Router& r, RouteContext& ctx);
void add_node_routes(http::Router& r, RouteContext& ctx);
void add_agent_routes(http::Router& r, RouteContext& ctx);
void add_log_routes(http::Router& r, RouteContext& ctx);
void add_console_routes(http::Router& r, RouteContext& ctx);
void add_project_routes(http::Router& r, RouteContext& ctx);
// GET /v1/usage; `clock` gives the default window's end.
void add_usage_routes(http::Router& r, RouteContext& ctx, const Clock& clock);

// GET, POST /v1/reservations, GET, DELETE /v1/reservations/{name} (admins only).
void add_reservation_routes(http::Router& r, RouteContext& ctx, const Clock& clock);
// A submission naming a reservation (ClusterState::check_reservation_use); after its
// project is resolved.
Status check_submit_reservation(const RouteContext& ctx, const Principal& who, const api::JobSpec& spec);

// A submission's project: fills in `who`'s default project; 400 naming `project`
// when it does not exist, 403 when `who` (not an admin) is not one of its members.
Status resolve_submit_project(const RouteContext& ctx, const Principal& who, api::JobSpec& spec);

}  // namespace tessel::scheduler
