#pragma once
// Helpers shared by the REST route files: JSON replies, the error envelope,
// authorization and strict body parsing. Handlers use them so that every
// failure leaves as {"error":{"code","message","field"?}} and nothing throws.

#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tessel/scheduler/api_error.hpp"
#include "tessel/scheduler/auth.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

// What route handlers share. Outlives the server.
struct RouteContext {
  ClusterState& state;
  const Authenticator& auth;
};

void reply_json(httplib::Response& res, int status, const nlohmann::json& body);
void reply_error(httplib::Response& res, const ApiError& e);
nlohmann::json error_json(const ApiError& e);

// Authorizes the request for `action`; on failure writes the 401/403 reply and returns nullopt.
std::optional<Principal> authorize(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res,
                                   Action action);

// Parses the body as JSON (size-checked); on failure writes a 400/413 and returns nullopt.
std::optional<nlohmann::json> parse_body(const httplib::Request& req, httplib::Response& res);

// Parses a non-negative decimal query parameter; nullopt with a 400 written on bad input.
// Returns `fallback` when the parameter is absent.
std::optional<int64_t> int_param(const httplib::Request& req, httplib::Response& res, const std::string& name,
                                 int64_t fallback, int64_t min, int64_t max);

void add_job_routes(httplib::Server& srv, RouteContext& ctx);
void add_node_routes(httplib::Server& srv, RouteContext& ctx);
void add_agent_routes(httplib::Server& srv, RouteContext& ctx);
void add_log_routes(httplib::Server& srv, RouteContext& ctx);

}  // namespace tessel::scheduler
