#include "tessel/scheduler/service.hpp"

#include <spdlog/spdlog.h>

#include "tessel/scheduler/http_util.hpp"
#include "tessel/scheduler/metrics.hpp"

namespace tessel::scheduler {

namespace {

// The HTTP server's connection counters, in the Prometheus text format.
std::string render_http_metrics(const http::ServerStats& s) {
  std::string o;
  auto metric = [&o](const char* name, const char* type, const char* help, uint64_t value) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(value) + "\n";
  };
  metric("tessel_http_connections", "gauge", "HTTP connections open now.", s.connections_open);
  metric("tessel_http_connections_total", "counter", "HTTP connections accepted.", s.connections_total);
  metric("tessel_http_connections_rejected_total", "counter",
         "HTTP connections answered 503 at once because --http-max-connections were open.", s.connections_rejected);
  metric("tessel_http_timeouts_total", "counter", "HTTP connections closed for a head, body, idle or write timeout.",
         s.timeouts);
  return o;
}

void add_public_routes(http::Router& r, RouteContext& ctx, const Service& service,
                       const std::function<std::string()>& extra_metrics,
                       const std::function<void(nlohmann::json&)>& extra_health) {
  // Liveness: 200 while the process serves requests. "storage" says whether writes
  // work; a restart does not mend a failing disk, so it does not turn this into a 5xx.
  r.add("GET", "/healthz", [&ctx, extra_health](http::Request&, const http::Reply& reply) {
    nlohmann::json body = {{"ok", true}, {"storage", ctx.state.storage_ok() ? "ok" : "failing"}};
    if (extra_health) extra_health(body);
    reply(json_reply(200, body));
  });
  // Metrics need no token (like /healthz): they carry counts, no job details.
  r.add("GET", "/metrics", [&ctx, &service, extra_metrics](http::Request&, const http::Reply& reply) {
    http::Response res;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = render_metrics(ctx.state.stats()) + render_http_metrics(service.http_stats());
    if (extra_metrics) res.body += extra_metrics();
    reply(std::move(res));
  });
}

}  // namespace

Service::Service(Store& store, const Clock& clock, std::optional<TokenTable> tokens, ServiceOptions opts)
    : opts_(std::move(opts)),
      clock_(clock),
      // The lookup runs only once requests are served, after state_ is constructed and restored.
      auth_(std::move(tokens), [this](const std::string& token) { return state_.node_tokens().node_of(token); }),
      state_(store, clock, opts_.state) {}

Service::~Service() { stop(); }

Status Service::start() {
  if (auto s = state_.restore(); !s) return s;
  ctx_ = std::make_unique<RouteContext>(
      RouteContext{state_, auth_, nullptr, nullptr, opts_.epoch,
                   StreamSlots::make("followed log streams", opts_.max_follow_streams_per_user)});
  http::Router router;
  add_public_routes(router, *ctx_, *this, opts_.extra_metrics, opts_.extra_health);
  add_job_routes(router, *ctx_);
  add_project_routes(router, *ctx_);
  add_usage_routes(router, *ctx_, clock_);
  add_reservation_routes(router, *ctx_, clock_);
  add_log_routes(router, *ctx_);
  add_node_routes(router, *ctx_);
  add_agent_routes(router, *ctx_);
  add_console_routes(router, *ctx_);
  routes_ = router.describe();
  http::ServerOptions so;
  so.host = opts_.host;
  so.port = opts_.port;
  so.io_threads = opts_.io_threads;
  so.blocking_threads = opts_.blocking_threads;
  so.limits = opts_.limits;
  so.name = "scheduler http";
  server_ = std::make_unique<http::Server>(so, std::move(router));
  ctx_->server = server_.get();
  events_ = std::make_unique<EventHub>(state_, *server_, clock_, opts_.events);
  ctx_->events = events_.get();
  auto port = server_->start();
  if (!port) return port.error();
  port_ = *port;
  started_ = true;
  sched_thread_ = std::thread([this] { state_.run_scheduler(); });
  if (opts_.liveness_tick_ms > 0) liveness_thread_ = std::thread([this] { liveness_loop(); });
  if (opts_.history_tick_ms > 0) history_thread_ = std::thread([this] { history_loop(); });
  return ok_status();
}

http::ServerStats Service::http_stats() const { return server_ ? server_->stats() : http::ServerStats{}; }

void Service::liveness_loop() {
  MutexLock lk(mu_);
  while (!stopped_) {
    // Real time only paces the check; what counts as "late" is decided by the Clock.
    cv_.wait_for(mu_, std::chrono::milliseconds(opts_.liveness_tick_ms), [&]() REQUIRES(mu_) { return stopped_; });
    if (stopped_) break;
    lk.unlock();
    state_.check_liveness();
    lk.lock();
  }
}

void Service::history_loop() {
  // Small batches, each one write with the state's lock released between them, so
  // submissions wait for one batch at most, never for the whole backlog.
  constexpr size_t kPruneBatch = 500;
  MutexLock lk(mu_);
  while (!stopped_) {
    cv_.wait_for(mu_, std::chrono::milliseconds(opts_.history_tick_ms), [&]() REQUIRES(mu_) { return stopped_; });
    while (!stopped_) {
      lk.unlock();
      auto pruned = state_.prune_history(kPruneBatch);
      lk.lock();
      if (!pruned) spdlog::warn("history pruning: {}", pruned.error().message);
      if (!pruned || *pruned < kPruneBatch) break;
    }
  }
}

void Service::stop() {
  {
    MutexLock lk(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  // Answers every parked long poll first: their replies hold connections of the server.
  state_.shutdown();
  if (events_) events_->stop();
  if (started_) {
    server_->stop();
    if (sched_thread_.joinable()) sched_thread_.join();
    if (liveness_thread_.joinable()) liveness_thread_.join();
    if (history_thread_.joinable()) history_thread_.join();
  }
}

void Service::request_stop() {
  {
    MutexLock lk(mu_);
    stop_requested_ = true;
  }
  cv_.notify_all();
}

void Service::wait() {
  MutexLock lk(mu_);
  cv_.wait(mu_, [&]() REQUIRES(mu_) { return stopped_ || stop_requested_; });
}

}  // namespace tessel::scheduler
