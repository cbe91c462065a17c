#include "tessel/api/job_update.hpp"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"

namespace tessel::api {

namespace {
constexpr const char* kFields[] = {"priority", "time_limit_s", "name", "after_ok", "after_any", "after_not_ok"};
}  // namespace

Result<JobUpdate> parse_job_update(const nlohmann::json& body) {
  if (!body.is_object()) return Error::invalid("body must be a JSON object");
  nlohmann::json stand_in = nlohmann::json::object();
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kFields), std::end(kFields), key) == std::end(kFields))
      return Error::invalid(key.substr(0, 64) +
                                ": cannot be updated (only priority, time_limit_s, name, after_ok, after_any and "
                                "after_not_ok)",
                            key.substr(0, 64));
    stand_in[key] = value;
  }
  if (stand_in.empty())
    return Error::invalid("body: nothing to update (priority, time_limit_s, name, after_ok, after_any, after_not_ok)");
  stand_in["command"] = nlohmann::json::array({"-"});  // Stands in for the check; not updated.
  auto parsed = parse_job_spec(stand_in);
  if (!parsed) return parsed.error();
  const JobSpec& s = *parsed;
  JobUpdate u;
  if (body.contains("priority")) u.priority = s.priority;
  if (body.contains("time_limit_s")) u.time_limit_s = s.time_limit_s;
  if (body.contains("name")) u.name = s.name;
  if (body.contains("after_ok")) u.after_ok = s.after_ok;
  if (body.contains("after_any")) u.after_any = s.after_any;
  if (body.contains("after_not_ok")) u.after_not_ok = s.after_not_ok;
  return u;
}

}  // namespace tessel::api
