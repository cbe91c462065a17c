// REST: /v1/jobs (submit, list, get, cancel, state history; job control: hold,
// release, signal, update, requeue).
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

namespace {

// A job's wire form leaves out its state history: GET /v1/jobs/{id}/events serves it.
json public_json(const api::Job& job) {
  json j = api::to_json(job);
  j.erase("events");
  return j;
}

// The job as `who` may see it: without its secrets unless `who` owns it or is an admin.
json job_json(const api::Job& job, const Principal& who) {
  json j = public_json(job);
  if (may_see_job_details(who, job.user)) return j;
  for (const char* secret : {"command", "env", "workdir"}) j["spec"].erase(secret);
  if (j.contains("reason")) j["reason"] = without_job_secrets(job.reason, job.spec);
  j["private"] = true;
  return j;
}

// Job control (issue 31): the job's owner or an admin; the state decides the rest.
void add_job_control_routes(http::Router& r, RouteContext& ctx) {
  using Control = Result<api::Job> (ClusterState::*)(const std::string&, const Principal&);
  for (const auto& route : {std::pair<const char*, Control>{"/v1/jobs/{id}/hold", &ClusterState::hold},
                            std::pair<const char*, Control>{"/v1/jobs/{id}/release", &ClusterState::release},
                            std::pair<const char*, Control>{"/v1/jobs/{id}/requeue", &ClusterState::requeue}}) {
    const Control control = route.second;  // A plain variable: clang 14 captures no structured binding.
    r.add(
        "POST", route.first,
        [&ctx, control](http::Request& req, const http::Reply& reply) {
          auto who = authorize(ctx, req, Action::cancel);
          if (!who) return reply(who.error());
          auto job = (ctx.state.*control)(req.captures[0], *who);
          if (!job) return reply(job.error());
          reply(json_reply(200, job_json(*job, *who)));
        },
        http::Exec::blocking);
  }
  r.add(
      "PATCH", "/v1/jobs/{id}",
      [&ctx](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::cancel);
        if (!who) return reply(who.error());
        auto body = parse_body(req);
        if (!body) return reply(body.error());
        auto update = api::parse_job_update(*body);
        if (!update) return reply(update.error());
        auto job = ctx.state.update(req.captures[0], *update, *who);
        if (!job) return reply(job.error());
        reply(json_reply(200, job_json(*job, *who)));
      },
      http::Exec::blocking);
  r.add(
      "POST", "/v1/jobs/{id}/signal",
      [&ctx](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::cancel);
        if (!who) return reply(who.error());
        auto body = parse_body(req);
        if (!body) return reply(body.error());
        auto name = api::parse_signal_request(*body);
        if (!name) return reply(name.error());
        auto job = ctx.state.signal(req.captures[0], *name, *who);
        if (!job) return reply(job.error());
        reply(json_reply(200, job_json(*job, *who)));
      },
      http::Exec::blocking);
}

}  // namespace

void add_job_routes(http::Router& r, RouteContext& ctx) {
  // Blocking: the 201 goes out once the job is committed (group commit).
  r.add(
      "POST", "/v1/jobs",
      [&ctx](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::submit);
        if (!who) return reply(who.error());
        auto body = parse_body(req);
        if (!body) return reply(body.error());
        auto parsed = api::parse_job_spec(*body);
        if (!parsed) return reply(parsed.error());
        if (auto s = resolve_submit_project(ctx, *who, *parsed); !s) return reply(s.error());
        if (auto s = check_submit_reservation(ctx, *who, *parsed); !s) return reply(s.error());
        auto job = ctx.state.submit(std::move(*parsed), who->name);
        if (!job) return reply(job.error());
        reply(json_reply(201, public_json(*job)));
      },
      http::Exec::blocking);

  r.add("GET", "/v1/jobs", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    JobFilter f;
    if (req.has_param("state")) {
      f.state = api::parse_job_state(req.param("state"));
      if (!f.state) return reply(Error::invalid("state: unknown job state", "state"));
    }
    f.user = req.param("user");
    auto limit = int_param(req, "limit", 100, 1, 1000);
    if (!limit) return reply(limit.error());
    f.limit = static_cast<int>(*limit);
    if (req.has_param("after")) {
      f.after = req.param("after");
      if (job_key(f.after) < 0) return reply(Error::invalid("after: not a job id cursor", "after"));
    }
    auto page = ctx.state.list_jobs(f);
    json jobs = json::array();
    for (const auto& j : page.jobs) jobs.push_back(job_json(j, *who));
    json out = {{"jobs", jobs}};
    if (!page.next.empty()) out["next"] = page.next;
    reply(json_reply(200, out));
  });

  r.add("GET", "/v1/jobs/{id}", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    auto j = ctx.state.job(req.captures[0]);
    if (!j) return reply(Error::not_found("job " + req.captures[0] + " not found"));
    reply(json_reply(200, job_json(*j, *who)));
  });

  // Whoever may read the job may read its history (reasons and nodes, no secrets).
  r.add("GET", "/v1/jobs/{id}/events", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    auto events = ctx.state.job_events(req.captures[0]);
    if (!events) return reply(Error::not_found("job " + req.captures[0] + " not found"));
    // Reasons may quote the job's workdir or arguments (a failure to exec them).
    std::optional<api::Job> hide;
    if (auto job = ctx.state.job(req.captures[0]); job && !may_see_job_details(*who, job->user)) hide = std::move(job);
    json out = json::array();
    for (auto& e : *events) {
      if (hide) e.reason = without_job_secrets(std::move(e.reason), hide->spec);
      out.push_back(api::to_json(e));
    }
    reply(json_reply(200, {{"job_id", req.captures[0]}, {"events", out}}));
  });

  r.add(
      "POST", "/v1/jobs/{id}/cancel",
      [&ctx](http::Request& req, const http::Reply& reply) {
        auto who = authorize(ctx, req, Action::cancel);
        if (!who) return reply(who.error());
        auto job = ctx.state.cancel(req.captures[0], *who);
        if (!job) return reply(job.error());
        reply(json_reply(200, public_json(*job)));
      },
      http::Exec::blocking);

  add_job_control_routes(r, ctx);
}

}  // namespace tessel::scheduler
