// REST: /v1/projects (admin writes; any user reads), and the project rules of a submission.
#include <algorithm>

#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

json project_json(const ClusterState& state, const api::Project& p,
                  const std::map<std::string, ClusterState::ProjectUsage>& usage) {
  json j = api::to_json(p);
  if (auto u = usage.find(p.name); u != usage.end()) {
    j["usage_card_seconds"] = u->second.usage;
    j["fair_share"] = u->second.fair_share;
  }
  // The limits its users' submissions meet (0: none), and its jobs not yet ended.
  const TenantLimits& lim = state.limits();
  int64_t per_user = lim.max_active_jobs_per_user;
  if (p.max_active_jobs_per_user && (per_user == 0 || *p.max_active_jobs_per_user < per_user))
    per_user = *p.max_active_jobs_per_user;
  j["limits"] = {{"max_active_jobs_per_user", per_user},
                 {"max_active_jobs", lim.max_active_jobs},
                 {"max_array_size", lim.max_array_size}};
  j["active_jobs"] = state.active_jobs_in(p.name);
  return j;
}

Result<api::Project> parse_project_body(const http::Request& req, const std::string& name) {
  auto body = parse_body(req);
  if (!body) return body.error();
  return api::parse_project(*body, name);
}

}  // namespace

Status resolve_submit_project(const RouteContext& ctx, const Principal& who, api::JobSpec& spec) {
  if (spec.project.empty()) spec.project = who.projects.empty() ? api::kDefaultProject : who.projects.front();
  if (auto p = ctx.state.project(spec.project); !p)
    return Error::invalid("project: unknown project " + spec.project, "project");
  if (who.role == Role::admin) return ok_status();
  const bool member = who.projects.empty()
                          ? spec.project == api::kDefaultProject
                          : std::find(who.projects.begin(), who.projects.end(), spec.project) != who.projects.end();
  if (!member) return Error::forbidden(who.name + " is not a member of project " + spec.project);
  return ok_status();
}

void add_project_routes(http::Router& r, RouteContext& ctx) {
  r.add("GET", "/v1/projects", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    const auto usage = ctx.state.project_usage();
    json list = json::array();
    for (const auto& p : ctx.state.projects()) list.push_back(project_json(ctx.state, p, usage));
    reply(json_reply(200, {{"projects", list}}));
  });
  r.add("GET", "/v1/projects/{name}", [&ctx](http::Request& req, const http::Reply& reply) {
    if (auto who = authorize(ctx, req, Action::read); !who) return reply(who.error());
    auto p = ctx.state.project(req.captures[0]);
    if (!p) return reply(p.error());
    reply(json_reply(200, project_json(ctx.state, *p, ctx.state.project_usage())));
  });
  r.add(
      "POST", "/v1/projects",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto p = parse_project_body(req, "");
        if (!p) return reply(p.error());
        auto created = ctx.state.create_project(*p);
        if (!created) return reply(created.error());
        reply(json_reply(201, api::to_json(*created)));
      },
      http::Exec::blocking);
  r.add(
      "PUT", "/v1/projects/{name}",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        if (!api::is_project_name(req.captures[0]))
          return reply(Error::invalid("name: not a valid project name", "name"));
        auto p = parse_project_body(req, req.captures[0]);
        if (!p) return reply(p.error());
        auto put = ctx.state.put_project(*p);
        if (!put) return reply(put.error());
        reply(json_reply(200, api::to_json(*put)));
      },
      http::Exec::blocking);
  r.add(
      "DELETE", "/v1/projects/{name}",
      [&ctx](http::Request& req, const http::Reply& reply) {
        if (auto who = authorize(ctx, req, Action::admin); !who) return reply(who.error());
        auto gone = ctx.state.delete_project(req.captures[0]);
        if (!gone) return reply(gone.error());
        reply(json_reply(200, api::to_json(*gone)));
      },
      http::Exec::blocking);
}

}  // namespace tessel::scheduler
