#include "tessel/scheduler/service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "tessel/api/http_listener.hpp"
#include "tessel/scheduler/http_util.hpp"
#include "tessel/scheduler/metrics.hpp"

namespace tessel::scheduler {

namespace {

void add_public_routes(httplib::Server& srv, RouteContext& ctx) {
  // Liveness: 200 while the process serves requests. "storage" says whether writes
  // work; a restart does not mend a failing disk, so it does not turn this into a 5xx.
  srv.Get("/healthz", [&ctx](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200, {{"ok", true}, {"storage", ctx.state.storage_ok() ? "ok" : "failing"}});
  });
  // Metrics need no token (like /healthz): they carry counts, no job details.
  srv.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(ctx.state.stats()), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void install_error_handling(httplib::Server& srv) {
  srv.set_payload_max_length(api::kMaxRequestBytes);
  srv.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("{} {}: unhandled exception: {}", req.method, req.path, what);
    reply_error(res, ApiError::internal("internal error"));
  });
  // Fills a JSON body for errors httplib produced itself (no route, body too large).
  srv.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e{res.status, "invalid_argument", "bad request", ""};
    // httplib refuses a POST that has neither Content-Length nor a chunked body.
    if (res.status == 400 && req.method == "POST" && !req.has_header("Content-Length") &&
        !req.has_header("Transfer-Encoding"))
      e.message = "bad request: a POST needs a Content-Length header (send an empty body with Content-Length: 0)";
    if (res.status == 404) e = ApiError::not_found("no such endpoint: " + req.method + " " + req.path);
    if (res.status == 405) e = {405, "invalid_argument", "method not allowed", ""};
    if (res.status == 413)
      e = ApiError::too_large("request body exceeds " + std::to_string(api::kMaxRequestBytes) + " bytes");
    if (res.status >= 500) e = ApiError::internal("internal error");
    int status = res.status;
    reply_error(res, e);
    res.status = status;
    return httplib::Server::HandlerResponse::Handled;
  }));
}

// Long polls may hold all HTTP threads but a reserve (an eighth, 8..256) kept for
// heartbeats, users and log streams: past that limit a poll is answered at once.
ServiceOptions with_long_poll_limit(ServiceOptions o) {
  if (o.state.max_long_polls > 0) return o;
  const auto threads = static_cast<int64_t>(o.http_threads);
  const int64_t reserve = std::clamp<int64_t>(threads / 8, 8, 256);
  o.state.max_long_polls = std::max<int64_t>(1, threads - reserve);
  return o;
}

}  // namespace

Service::Service(Store& store, const Clock& clock, std::optional<TokenTable> tokens, ServiceOptions opts)
    : opts_(with_long_poll_limit(std::move(opts))), auth_(std::move(tokens)), state_(store, clock, opts_.state) {}

Service::~Service() { stop(); }

Status Service::start() {
  if (auto s = state_.restore(); !s) return s;
  ctx_ = std::make_unique<RouteContext>(RouteContext{state_, auth_});
  server_ = std::make_unique<httplib::Server>();
  const size_t threads = opts_.http_threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_tcp_nodelay(true);            // Headers and body go out as separate writes: no Nagle delay.
  server_->set_keep_alive_max_count(10000);  // httplib closes after 5 requests by default.
  // An idle keep-alive connection holds a worker thread: release it well before the
  // next heartbeat (every 5 s) so a node costs one thread (its long poll), not two.
  server_->set_keep_alive_timeout(2);
  api::ListenerOptions listener(*server_);
  install_error_handling(*server_);
  add_public_routes(*server_, *ctx_);
  add_job_routes(*server_, *ctx_);
  add_log_routes(*server_, *ctx_);
  add_node_routes(*server_, *ctx_);
  add_agent_routes(*server_, *ctx_);
  if (opts_.port == 0) {
    port_ = server_->bind_to_any_port(opts_.host);
    if (port_ <= 0) return Error{"cannot listen on " + opts_.host + ":0"};
  } else {
    if (!server_->bind_to_port(opts_.host, opts_.port))
      return Error{"cannot listen on " + opts_.host + ":" + std::to_string(opts_.port)};
    port_ = opts_.port;
  }
  if (!listener.widen_backlog()) spdlog::warn("could not widen the listen backlog: {}", std::strerror(errno));
  started_ = true;
  http_thread_ = std::thread([this] {
    if (!server_->listen_after_bind()) spdlog::error("HTTP server stopped unexpectedly");
  });
  sched_thread_ = std::thread([this] { state_.run_scheduler(); });
  if (opts_.liveness_tick_ms > 0) liveness_thread_ = std::thread([this] { liveness_loop(); });
  return ok_status();
}

void Service::liveness_loop() {
  std::unique_lock lk(mu_);
  while (!stopped_) {
    // Real time only paces the check; what counts as "late" is decided by the Clock.
    cv_.wait_for(lk, std::chrono::milliseconds(opts_.liveness_tick_ms), [&] { return stopped_; });
    if (stopped_) break;
    lk.unlock();
    state_.check_liveness();
    lk.lock();
  }
}

void Service::stop() {
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  state_.shutdown();  // Wakes long polls so the server's workers can finish.
  if (started_) {
    server_->stop();
    if (http_thread_.joinable()) http_thread_.join();
    if (sched_thread_.joinable()) sched_thread_.join();
    if (liveness_thread_.joinable()) liveness_thread_.join();
  }
}

void Service::request_stop() {
  {
    std::lock_guard lk(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
}

void Service::wait() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return stopped_ || stop_requested_; });
}

}  // namespace tessel::scheduler
