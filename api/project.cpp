#include "tessel/api/project.hpp"

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {

// One quota object at `quotas.<model>`: the first problem, with its full field path.
std::optional<FieldError> read_quota(const std::string& model, const json& q, Quota& out) {
  const std::string field = "quotas." + model;
  if (!q.is_object()) return FieldError{field, field + ": must be an object with guaranteed and max"};
  FieldReader r(q, field);
  std::optional<int64_t> guaranteed;
  r.optional_int("guaranteed", guaranteed, 0, kMaxQuotaCards);
  out.guaranteed = guaranteed.value_or(0);
  if (r.has("max") && !q["max"].is_null()) r.optional_int("max", out.max, 0, kMaxQuotaCards);
  if (out.max && out.guaranteed > *out.max) r.fail("guaranteed", "must not exceed max");
  return r.finish_field();
}

// A field error as the Error a parse returns.
Error invalid_field(const FieldError& e) { return Error::invalid(e.message, e.field); }

}  // namespace

Result<Project> parse_project(const json& j, const std::string& name) {
  if (!j.is_object()) return Error::invalid("body must be a JSON object");
  Project p;
  FieldReader r(j, "");
  if (name.empty()) {
    r.required_string("name", p.name, 64);
  } else {
    p.name = name;
    std::string body_name;
    r.optional_string("name", body_name, 64);
    if (!body_name.empty() && body_name != name) r.fail("name", "does not match the project in the URL");
  }
  if (!p.name.empty() && !is_project_name(p.name))
    r.fail("name", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  std::optional<int64_t> shares;
  r.optional_int("shares", shares, 1, kMaxShares);
  p.shares = shares.value_or(1);
  if (r.has("max_active_jobs_per_user") && !j["max_active_jobs_per_user"].is_null())
    r.optional_int("max_active_jobs_per_user", p.max_active_jobs_per_user, 1, kMaxActiveJobsLimit);
  if (r.has("quotas")) {
    const auto& qs = j["quotas"];
    if (!qs.is_object()) {
      r.fail("quotas", "must be an object of model -> {guaranteed, max}");
    } else {
      for (const auto& [model, q] : qs.items()) {
        if (model.empty() || model.size() > 64) {
          r.fail("quotas", "model names must be 1 to 64 characters");
          break;
        }
        Quota quota;
        if (auto e = read_quota(model, q, quota)) return invalid_field(*e);
        p.quotas[model] = quota;
      }
    }
  }
  if (auto e = r.finish_field()) return invalid_field(*e);
  return p;
}

json to_json(const Project& p) {
  json quotas = json::object();
  for (const auto& [model, q] : p.quotas)
    quotas[model] = {{"guaranteed", q.guaranteed}, {"max", q.max ? json(*q.max) : json(nullptr)}};
  json j = {{"name", p.name}, {"shares", p.shares}, {"quotas", quotas}};
  if (p.max_active_jobs_per_user) j["max_active_jobs_per_user"] = *p.max_active_jobs_per_user;
  return j;
}

}  // namespace tessel::api
