#include "tessel/api/signals.hpp"

#include <signal.h>

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/api/json_fields.hpp"

namespace tessel::api {

namespace {
constexpr std::array<std::pair<std::string_view, int>, 7> kSignals{{{"USR1", SIGUSR1},
                                                                    {"USR2", SIGUSR2},
                                                                    {"TERM", SIGTERM},
                                                                    {"INT", SIGINT},
                                                                    {"HUP", SIGHUP},
                                                                    {"URG", SIGURG},
                                                                    {"CONT", SIGCONT}}};
}  // namespace

void read_warning_signal(FieldReader& r, const nlohmann::json& spec, JobSpec& s) {
  if (!r.has("signal")) return;
  const nlohmann::json& j = spec["signal"];
  if (!j.is_object()) return r.fail("signal", R"(must be an object {"name": "USR1", "before_s": 120})");
  WarningSignal w;
  FieldReader sr(j, "signal");
  sr.required_string("name", w.name, 16);
  std::optional<int64_t> before;
  sr.optional_int("before_s", before, 1, 366LL * 24 * 3600);
  w.before_s = before.value_or(kDefaultWarningBeforeS);
  if (sr.has("name") && !signal_number(w.name)) sr.fail("name", "must be one of " + signal_names());
  if (s.time_limit_s && w.before_s > *s.time_limit_s)
    sr.fail("before_s", "must not be past the time limit (time_limit_s " + std::to_string(*s.time_limit_s) + ")");
  if (auto e = sr.finish_field()) return r.fail(e->field, e->message.substr(e->field.size() + 2));
  s.signal = std::move(w);
}

nlohmann::json to_json(const WarningSignal& w) { return {{"name", w.name}, {"before_s", w.before_s}}; }

Result<std::string> parse_signal_request(const nlohmann::json& body) {
  if (!body.is_object()) return Error::invalid(R"(body: must be an object {"name": "USR1"})");
  std::string name;
  FieldReader r(body, "");
  r.required_string("name", name, 16);
  if (r.has("name") && !signal_number(name)) r.fail("name", "must be one of " + signal_names());
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  return name;
}

std::optional<int> signal_number(std::string_view name) {
  for (const auto& [n, signo] : kSignals)
    if (n == name) return signo;
  return std::nullopt;
}

std::string signal_names() {
  std::string out;
  for (const auto& [n, signo] : kSignals) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

bool is_job_signal(int signo) {
  for (const auto& [n, s] : kSignals)
    if (s == signo) return true;
  return false;
}

nlohmann::json to_json(const std::vector<JobSignal>& signals) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : signals) out.push_back({{"id", s.id}, {"name", s.name}});
  return out;
}

Result<std::vector<JobSignal>> signals_from_json(const nlohmann::json& j) {
  if (!j.is_array() || j.size() > kMaxJobSignals)
    return Error::invalid("signals: an array of at most " + std::to_string(kMaxJobSignals), "signals");
  std::vector<JobSignal> out;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("id") || !e["id"].is_number_integer() || !e.contains("name") ||
        !e["name"].is_string())
      return Error::invalid("signals: each an object with an integer id and a name", "signals");
    JobSignal s{e["id"].get<int>(), e["name"].get<std::string>()};
    if (s.id <= 0 || (!out.empty() && s.id <= out.back().id))
      return Error::invalid("signals: ids must be positive and rising", "signals");
    if (!signal_number(s.name)) return Error::invalid("signals: unknown signal " + s.name, "signals");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessel::api
