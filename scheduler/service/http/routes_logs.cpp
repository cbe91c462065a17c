// REST: GET /v1/jobs/{id}/logs?rank=N&follow=true&offset=B, forwarded to the
// agent that runs the rank (its /v1/tasks/<assignment>/logs endpoint) and streamed
// back piece by piece: neither a log's size nor a follower costs a thread or memory.
#include <chrono>

#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

namespace {
constexpr std::chrono::hours kFollowReadTimeout{24};
constexpr std::chrono::seconds kReadTimeout{30};
}  // namespace

void add_log_routes(http::Router& r, RouteContext& ctx) {
  r.add("GET", "/v1/jobs/{id}/logs", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    auto job = ctx.state.job(req.captures[0]);
    if (!job) return reply(Error::not_found("job " + req.captures[0] + " not found"));
    if (!may_see_job_details(*who, job->user))
      return reply(Error::forbidden("the logs of " + job->id + " are its owner's (" + job->user + ") and the admins'"));
    auto rank = int_param(req, "rank", 0, 0, 1 << 20);
    if (!rank) return reply(rank.error());
    auto offset = int_param(req, "offset", 0, 0, INT64_MAX / 2);
    if (!offset) return reply(offset.error());
    const std::string follow_s = req.param("follow");
    if (!follow_s.empty() && follow_s != "true" && follow_s != "false")
      return reply(Error::invalid("follow: must be true or false", "follow"));
    const bool follow = follow_s == "true";
    auto target = ctx.state.log_target(req.captures[0], static_cast<int>(*rank));
    if (!target) return reply(target.error());
    const std::string path = "/v1/tasks/" + target->assignment_id + "/logs?task=" + std::to_string(target->local_rank) +
                             "&offset=" + std::to_string(*offset) + "&follow=" + (follow ? "true" : "false");
    http::ForwardOptions opts;
    opts.read_timeout = follow ? std::chrono::milliseconds(kFollowReadTimeout) : kReadTimeout;
    if (follow && ctx.follow_slots) {
      auto slot = ctx.follow_slots->take(who->name);
      if (!slot) return reply(slot.error());
      opts.hold = std::move(*slot);
    }
    if (!target->scheduler_key.empty()) opts.headers.push_back({"Authorization", "Bearer " + target->scheduler_key});
    http::forward_get(*ctx.server, target->address, target->agent_port, path, std::move(opts), reply);
  });
}

}  // namespace tessel::scheduler
