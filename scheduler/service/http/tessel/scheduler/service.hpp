#pragma once
// Service: the whole scheduler in one object: cluster state, REST server
// (tessel::http on Boost.Asio), scheduler thread and liveness ticker. main.cpp wraps it in a process; tests
// run it in-process on port 0 with a FakeClock and an in-memory store.
//
// Lifetime: the Store and Clock outlive the Service. start() once; stop() is
// idempotent and called by the destructor.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessel/http/server.hpp"
#include "tessel/scheduler/auth.hpp"
#include "tessel/scheduler/event_hub.hpp"
#include "tessel/scheduler/state.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

struct RouteContext;

struct ServiceOptions {
  std::string host = "127.0.0.1";
  int port = 7450;  // 0: any free port (see Service::port()).
  StateOptions state;
  // Real-time period of the liveness check; 0 disables the ticker (tests call
  // state().check_liveness() after moving their FakeClock).
  int64_t liveness_tick_ms = 1000;
  // Real-time period of history pruning (ClusterState::prune_history, in batches of
  // kPruneBatch jobs, each its own write); 0 disables it (tests call prune_history()
  // after moving their FakeClock). Which jobs are old is decided by the Clock.
  int64_t history_tick_ms = 60'000;
  // I/O threads of the HTTP server; 0: one per core. Connections, long polls and
  // log streams cost none of them while they wait.
  int io_threads = 0;
  // Threads that run handlers which wait for a database commit (they share group commits).
  int blocking_threads = 32;
  http::Limits limits;
  // The console's live updates (GET /v1/events): streams open at once, and more.
  EventHubOptions events;
  // Followed log streams one user may hold at once (past it 429); 0: no cap.
  size_t max_follow_streams_per_user = 32;
  // More Prometheus text appended to GET /metrics (e.g. the periodic backups' counters);
  // called from an I/O thread, must not block.
  std::function<std::string()> extra_metrics;
  // More fields of GET /healthz (a replica's role and epoch); called from an I/O
  // thread, must not block.
  std::function<void(nlohmann::json&)> extra_health;
  // The leader lease's epoch this scheduler leads with (replicas), 0 without replicas:
  // every agent-protocol answer carries it, and agents refuse answers of older epochs.
  int64_t epoch = 0;
};

class Service {
 public:
  Service(Store& store, const Clock& clock, std::optional<TokenTable> tokens, ServiceOptions opts);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Restores state from the store, binds the listening socket and starts the
  // threads. Errors: restore failure, bind failure.
  Status start();
  int port() const { return port_; }
  // The routes served, "METHOD /path/{capture}" (set by start()).
  const std::vector<std::string>& routes() const { return routes_; }
  http::ServerStats http_stats() const;
  ClusterState& state() { return state_; }
  // Open event streams (GET /v1/events).
  size_t event_clients() const { return events_ ? events_->clients() : 0; }
  // Stops serving, wakes long polls, joins all threads.
  void stop() EXCLUDES(mu_);
  // Asks wait() to return; safe from any thread (e.g. a signal thread). Does not stop.
  void request_stop() EXCLUDES(mu_);
  // Blocks until request_stop() or stop() has been called.
  void wait() EXCLUDES(mu_);

 private:
  void liveness_loop() EXCLUDES(mu_);
  void history_loop() EXCLUDES(mu_);

  ServiceOptions opts_;
  const Clock& clock_;
  Authenticator auth_;
  ClusterState state_;
  std::unique_ptr<RouteContext> ctx_;
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<EventHub> events_;
  int port_ = 0;
  std::vector<std::string> routes_;
  std::thread sched_thread_, liveness_thread_, history_thread_;
  Mutex mu_;
  CondVar cv_;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool stop_requested_ GUARDED_BY(mu_) = false;
  bool started_ = false;
};

}  // namespace tessel::scheduler
