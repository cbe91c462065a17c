// REST: /v1/jobs (submit, list, get, cancel).
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

using nlohmann::json;

void add_job_routes(httplib::Server& srv, RouteContext& ctx) {
  srv.Post("/v1/jobs", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto who = authorize(ctx, req, res, Action::submit);
    if (!who) return;
    auto body = parse_body(req, res);
    if (!body) return;
    auto parsed = api::parse_job_spec(*body);
    if (!parsed.spec) return reply_error(res, ApiError::invalid(parsed.error->message, parsed.error->field));
    auto r = ctx.state.submit(std::move(*parsed.spec), who->name);
    if (auto* e = api_error(r)) return reply_error(res, *e);
    reply_json(res, 201, api::to_json(std::get<api::Job>(r)));
  });

  srv.Get("/v1/jobs", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    JobFilter f;
    if (req.has_param("state")) {
      f.state = api::parse_job_state(req.get_param_value("state"));
      if (!f.state) return reply_error(res, ApiError::invalid("state: unknown job state", "state"));
    }
    f.user = req.get_param_value("user");
    auto limit = int_param(req, res, "limit", 100, 1, 1000);
    if (!limit) return;
    f.limit = static_cast<int>(*limit);
    if (req.has_param("after")) {
      f.after = req.get_param_value("after");
      if (job_seq(f.after) < 0) return reply_error(res, ApiError::invalid("after: not a job id cursor", "after"));
    }
    auto page = ctx.state.list_jobs(f);
    json jobs = json::array();
    for (const auto& j : page.jobs) jobs.push_back(api::to_json(j));
    json out = {{"jobs", jobs}};
    if (!page.next.empty()) out["next"] = page.next;
    reply_json(res, 200, out);
  });

  srv.Get(R"(/v1/jobs/([^/]+))", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    auto j = ctx.state.job(req.matches[1]);
    if (!j) return reply_error(res, ApiError::not_found("job " + std::string(req.matches[1]) + " not found"));
    reply_json(res, 200, api::to_json(*j));
  });

  srv.Post(R"(/v1/jobs/([^/]+)/cancel)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto who = authorize(ctx, req, res, Action::cancel);
    if (!who) return;
    auto r = ctx.state.cancel(req.matches[1], *who);
    if (auto* e = api_error(r)) return reply_error(res, *e);
    reply_json(res, 200, api::to_json(std::get<api::Job>(r)));
  });
}

}  // namespace tessel::scheduler
