#include "tessel/scheduler/http_util.hpp"

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

using nlohmann::json;

json error_json(const ApiError& e) {
  json err = {{"code", e.code}, {"message", e.message}};
  if (!e.field.empty()) err["field"] = e.field;
  return {{"error", err}};
}

void reply_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) { reply_json(res, e.status, error_json(e)); }

std::optional<Principal> authorize(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res,
                                   Action action) {
  auto r = ctx.auth.authorize(req.get_header_value("Authorization"), action);
  if (auto* e = api_error(r)) {
    if (e->status == 401) res.set_header("WWW-Authenticate", "Bearer");
    reply_error(res, *e);
    return std::nullopt;
  }
  return std::get<Principal>(r);
}

std::optional<json> parse_body(const httplib::Request& req, httplib::Response& res) {
  if (req.body.size() > api::kMaxRequestBytes) {
    reply_error(res, ApiError::too_large("request body exceeds " + std::to_string(api::kMaxRequestBytes) + " bytes"));
    return std::nullopt;
  }
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) {
    reply_error(res, ApiError::invalid("body is not valid JSON"));
    return std::nullopt;
  }
  if (!j.is_object()) {
    reply_error(res, ApiError::invalid("body must be a JSON object"));
    return std::nullopt;
  }
  return j;
}

std::optional<int64_t> int_param(const httplib::Request& req, httplib::Response& res, const std::string& name,
                                 int64_t fallback, int64_t min, int64_t max) {
  if (!req.has_param(name.c_str())) return fallback;
  const std::string v = req.get_param_value(name.c_str());
  int64_t out = 0;
  bool ok = !v.empty() && v.size() <= 18;
  for (char c : v) {
    if (c < '0' || c > '9') ok = false;
    if (ok) out = out * 10 + (c - '0');
  }
  if (!ok || out < min || out > max) {
    reply_error(res, ApiError::invalid(
                         name + ": must be an integer in " + std::to_string(min) + ".." + std::to_string(max), name));
    return std::nullopt;
  }
  return out;
}

}  // namespace tessel::scheduler
