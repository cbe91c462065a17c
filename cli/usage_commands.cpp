#include "tessel/cli/usage_commands.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/cli/duration.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {

std::string hours_text(double card_seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", card_seconds / 3600.0);
  return buf;
}

}  // namespace

Result<std::string> usage_time_arg(const std::string& flag, const std::string& text, int64_t now_ms) {
  if (api::parse_rfc3339(text)) return text;
  auto ago = parse_duration(text);
  if (!ago)
    return Error::invalid(
        flag + ": expected an RFC 3339 time (2026-11-01T00:00:00Z) or a duration ago (7d), got '" + text + "'", flag);
  return api::format_rfc3339(now_ms - *ago * 1000);
}

int cmd_usage(Session& s, const UsageOptions& o) {
  std::string query = "?by=" + o.by;
  const int64_t now = s.env().now_unix_ms();
  for (const char* name : {"since", "until"}) {
    const std::string& value = name == std::string("since") ? o.since : o.until;
    if (value.empty()) continue;
    auto t = usage_time_arg(std::string("--") + name, value, now);
    if (!t) return s.usage("usage", t.error());
    query += std::string("&") + name + "=" + url_encode(*t);
  }
  if (!o.project.empty()) query += "&project=" + url_encode(o.project);
  if (!o.user.empty()) query += "&user=" + url_encode(o.user);
  auto* c = s.client("usage");
  if (!c) return kExitUsage;
  auto r = c->get("/v1/usage" + query);
  if (!r) return s.fail("usage", r.error());
  if (o.json || s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const auto& rows = get_field(*r, "usage");
  if (!rows.is_array()) return s.fail("usage", Error{"server answer has no \"usage\" array"});
  const std::string key = o.by == "user" ? "user" : "project";
  // Jobs without cards count CPU-hours (model "none"): a column only when there are any.
  bool cpu_rows = false;
  for (const auto& row : rows) cpu_rows = cpu_rows || get_field(row, "cpu_seconds").is_number();
  Table t(cpu_rows
              ? std::vector<std::string>{key == "user" ? "USER" : "PROJECT", "MODEL", "CARD-HOURS", "JOBS", "CPU-HOURS"}
              : std::vector<std::string>{key == "user" ? "USER" : "PROJECT", "MODEL", "CARD-HOURS", "JOBS"});
  for (const auto& row : rows) {
    const auto& cs = get_field(row, "card_seconds");
    const auto& jobs = get_field(row, "jobs");
    std::vector<std::string> cells{printable(get_string(row, key.c_str())), printable(get_string(row, "model")),
                                   cs.is_number() ? hours_text(cs.get<double>()) : "-",
                                   jobs.is_number_integer() ? std::to_string(jobs.get<int64_t>()) : "-"};
    if (cpu_rows) {
      const auto& cpu = get_field(row, "cpu_seconds");
      cells.push_back(cpu.is_number() ? hours_text(cpu.get<double>()) : "-");
    }
    t.add_row(cells);
  }
  s.env().out << "Usage from " << printable(get_string(*r, "since")) << " to " << printable(get_string(*r, "until"))
              << '\n'
              << t.render();
  return kExitOk;
}

}  // namespace tessel::cli
