#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

http::Response json_reply(int status, const json& body) {
  return http::json_response(status, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

Result<Principal> authorize(const RouteContext& ctx, const http::Request& req, Action action) {
  return ctx.auth.authorize(req.header("Authorization"), action);
}

Result<json> parse_body(const http::Request& req) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) return Error::invalid("body is not valid JSON");
  if (!j.is_object()) return Error::invalid("body must be a JSON object");
  return j;
}

Result<int64_t> int_param(const http::Request& req, const std::string& name, int64_t fallback, int64_t min,
                          int64_t max) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.param(name);
  int64_t out = 0;
  bool ok = !v.empty() && v.size() <= 18;
  for (char c : v) {
    if (c < '0' || c > '9') ok = false;
    if (ok) out = out * 10 + (c - '0');
  }
  if (!ok || out < min || out > max)
    return Error::invalid(name + ": must be an integer in " + std::to_string(min) + ".." + std::to_string(max), name);
  return out;
}

}  // namespace tessel::scheduler
