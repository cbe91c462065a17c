// REST: GET /v1/jobs/{id}/logs?rank=N&follow=true&offset=B, proxied to the
// agent that runs the rank (its /v1/tasks/<assignment>/logs endpoint).
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

namespace {
constexpr time_t kFollowReadTimeoutS = 24 * 3600;
}

void add_log_routes(httplib::Server& srv, RouteContext& ctx) {
  srv.Get(R"(/v1/jobs/([^/]+)/logs)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (!authorize(ctx, req, res, Action::read)) return;
    auto rank = int_param(req, res, "rank", 0, 0, 1 << 20);
    if (!rank) return;
    auto offset = int_param(req, res, "offset", 0, 0, INT64_MAX / 2);
    if (!offset) return;
    const std::string follow_s = req.get_param_value("follow");
    if (!follow_s.empty() && follow_s != "true" && follow_s != "false")
      return reply_error(res, ApiError::invalid("follow: must be true or false", "follow"));
    const bool follow = follow_s == "true";
    auto t = ctx.state.log_target(req.matches[1], static_cast<int>(*rank));
    if (auto* e = api_error(t)) return reply_error(res, *e);
    const LogTarget target = std::get<LogTarget>(t);
    const std::string path = "/v1/tasks/" + target.assignment_id + "/logs?task=" + std::to_string(target.local_rank) +
                             "&offset=" + std::to_string(*offset) + "&follow=" + (follow ? "true" : "false");
    httplib::Headers headers;
    if (!target.token.empty()) headers.emplace("Authorization", "Bearer " + target.token);
    if (!follow) {
      httplib::Client cli(target.address, target.agent_port);
      cli.set_connection_timeout(5);
      cli.set_read_timeout(30);
      auto r = cli.Get(path.c_str(), headers);
      if (!r)
        return reply_error(res,
                           ApiError::unavailable("agent " + target.address + ":" + std::to_string(target.agent_port) +
                                                 " unreachable: " + httplib::to_string(r.error())));
      res.status = r->status;
      res.set_content(r->body,
                      r->get_header_value("Content-Type").empty() ? "text/plain" : r->get_header_value("Content-Type"));
      return;
    }
    res.set_chunked_content_provider("text/plain", [target, path, headers](size_t, httplib::DataSink& sink) {
      httplib::Client cli(target.address, target.agent_port);
      cli.set_connection_timeout(5);
      cli.set_read_timeout(kFollowReadTimeoutS);
      auto r = cli.Get(path.c_str(), headers,
                       [&sink](const char* data, size_t n) { return sink.is_writable() && sink.write(data, n); });
      if (!r && r.error() != httplib::Error::Canceled) {
        std::string msg = "\n[tessel: log stream from agent ended: " + httplib::to_string(r.error()) + "]\n";
        if (sink.is_writable()) sink.write(msg.data(), msg.size());
      }
      sink.done();
      return true;
    });
  });
}

}  // namespace tessel::scheduler
