#pragma once
// Projects: who shares the fleet, and how (GET/POST /v1/projects). A project has
// fair-share `shares` and, per card model ("*": all models together), a quota:
// `guaranteed` cards (ordered ahead while under it; only preemptible jobs may
// borrow past it) and a `max` it never holds more than. The JSON form is both
// the wire contract (api/openapi.yaml) and what the store keeps.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/json_fields.hpp"
#include "tessel/base/result.hpp"

namespace tessel::api {

// The project every job belongs to when neither the job nor its user names one.
inline constexpr const char* kDefaultProject = "default";
inline constexpr const char* kAnyModel = "*";
inline constexpr int64_t kMaxShares = 1'000'000;
inline constexpr int64_t kMaxQuotaCards = 1'000'000;
inline constexpr int64_t kMaxActiveJobsLimit = 100'000'000;

struct Quota {
  int64_t guaranteed = 0;
  std::optional<int64_t> max;  // nullopt: no limit.
  bool operator==(const Quota&) const = default;
};

struct Project {
  std::string name;
  int64_t shares = 1;
  std::map<std::string, Quota> quotas;  // By model name, or kAnyModel.
  // Jobs not yet ended that one user may have in this project (array elements count
  // one each); nullopt: only the scheduler's own limits apply.
  std::optional<int64_t> max_active_jobs_per_user;
  bool operator==(const Project&) const = default;
};

// Strict parse of a project body: unknown fields, shares < 1, negative cards, a
// guaranteed above max are errors naming the field ("quotas.HL-225.max"). Model
// keys are free strings (a model not in the fleet yet is allowed). `name`, when
// not empty, is the name from the URL: the body may omit it or must repeat it. The
// error is invalid_argument with the field's path in `field` and in the message.
Result<Project> parse_project(const nlohmann::json& j, const std::string& name = "");
nlohmann::json to_json(const Project& p);

}  // namespace tessel::api
