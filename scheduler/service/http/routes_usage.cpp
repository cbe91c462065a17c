// REST: GET /v1/usage, the accounting report (accounting.hpp for the window rule).
// Who sees what: an admin every record; a user the records of their own jobs and
// those of every project they are a member of (the tokens file's projects; without
// any, the default project), summed by project or by user as asked. `project=` and
// `user=` narrow that further; they never widen it.
#include <algorithm>

#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

constexpr int64_t kDefaultWindowMs = int64_t{30} * 24 * 3600 * 1000;

// As the tokens file allows a name: 1 to 128 bytes, no space or control character.
bool is_user_name(const std::string& s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f;
  });
}

// An RFC 3339 query parameter; `fallback` when absent.
Result<int64_t> time_param(const http::Request& req, const std::string& name, int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  auto t = api::parse_rfc3339(req.param(name));
  if (!t) return Error::invalid(name + ": not an RFC 3339 time (e.g. 2026-11-01T00:00:00Z)", name);
  return *t;
}

Result<UsageQuery> parse_usage_query(const http::Request& req, const Principal& who, int64_t now) {
  UsageQuery q;
  const std::string by = req.has_param("by") ? req.param("by") : "project";
  if (by == "user")
    q.by = UsageBy::user;
  else if (by != "project")
    return Error::invalid("by: must be project or user", "by");
  auto until = time_param(req, "until", now);
  if (!until) return until.error();
  auto since = time_param(req, "since", *until - kDefaultWindowMs);
  if (!since) return since.error();
  if (*since >= *until) return Error::invalid("since: must be before until", "since");
  q.since_ms = *since;
  q.until_ms = *until;
  if (req.has_param("project")) {
    q.only_project = req.param("project");
    if (!api::is_project_name(q.only_project)) return Error::invalid("project: not a project name", "project");
  }
  if (req.has_param("user")) {
    q.only_user = req.param("user");
    if (!is_user_name(q.only_user)) return Error::invalid("user: not a user name", "user");
  }
  if (who.role != Role::admin) {
    q.all = false;
    q.user = who.name;
    if (who.projects.empty())
      q.projects.insert(api::kDefaultProject);
    else
      q.projects.insert(who.projects.begin(), who.projects.end());
  }
  return q;
}

}  // namespace

void add_usage_routes(http::Router& r, RouteContext& ctx, const Clock& clock) {
  r.add(
      "GET", "/v1/usage",
      [&ctx, &clock](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::read);
        if (!who) return reply(who.error());
        auto q = parse_usage_query(req, *who, clock.now_ms());
        if (!q) return reply(q.error());
        const char* key = q->by == UsageBy::project ? "project" : "user";
        json rows = json::array();
        for (const auto& row : ctx.state.usage(*q)) {
          json r = {{key, row.key}, {"model", row.model}, {"card_seconds", row.card_seconds}, {"jobs", row.jobs}};
          if (row.cpu_seconds > 0) r["cpu_seconds"] = row.cpu_seconds;  // Jobs without cards (model "none").
          rows.push_back(std::move(r));
        }
        reply(json_reply(200, {{"by", key},
                               {"since", api::format_rfc3339(q->since_ms)},
                               {"until", api::format_rfc3339(q->until_ms)},
                               {"usage", rows}}));
      },
      // Sums over every record in the window: off the I/O threads.
      http::Exec::blocking);
}

}  // namespace tessel::scheduler
