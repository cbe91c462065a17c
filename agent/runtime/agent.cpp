#include "tessel/agent/agent.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <thread>

namespace tessel::agent {

using namespace std::chrono;

namespace {
// While the state dir cannot be written, it is probed (and the node's state sent)
// this often, whatever the heartbeat interval.
constexpr milliseconds kDegradedProbe{1000};
}  // namespace

// Binds the socket supervisors tell about their tasks; without one the agent still
// works, only later (the reporter's check every interval finds the changes).
static std::unique_ptr<TaskEventSocket> bind_events_socket(const std::string& path) {
  if (path.empty()) return nullptr;
  auto sock = TaskEventSocket::bind(path);
  if (!sock) {
    spdlog::warn("task events: {}; task ends reach the scheduler within a heartbeat interval instead of at once",
                 sock.error().message);
    return nullptr;
  }
  return std::move(*sock);
}

Agent::Agent(AgentConfig cfg, SchedulerApi& heartbeat_api, SchedulerApi& poll_api, SchedulerApi& report_api,
             InventorySource& inventory, TaskManager& tasks, Notifier& notifier)
    : cfg_(std::move(cfg)),
      hb_api_(heartbeat_api),
      poll_api_(poll_api),
      report_api_(report_api),
      inventory_(inventory),
      tasks_(tasks),
      notifier_(notifier),
      events_(bind_events_socket(cfg_.events_socket)),
      interval_(cfg_.heartbeat_interval.value_or(seconds(5))),
      clock_(cfg_.clock ? *cfg_.clock : system_clock()) {}

void Agent::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (events_) events_->interrupt();
  poll_api_.cancel();
  hb_api_.cancel();
  report_api_.cancel();
}

bool Agent::wait_for(milliseconds d) {
  MutexLock lock(mu_);
  cv_.wait_for(mu_, d, [&]() REQUIRES(mu_) { return stopping_ || wake_heartbeat_; });
  wake_heartbeat_ = false;
  return !stopping_;
}

void Agent::on_registered(milliseconds interval) {
  {
    MutexLock lock(mu_);
    registered_ = true;
    interval_ = interval;
    // The registration carried the reports, but acks come only in a report's answer,
    // and what the reporter last had accepted may predate a scheduler that forgot us.
    reports_dirty_ = true;
  }
  cv_.notify_all();
}

void Agent::publish_status() {
  notifier_.status("registered with " + cfg_.scheduler_url + ", " + std::to_string(tasks_.running_count()) +
                   " tasks running");
}

Result<bool> Agent::heartbeat_once(const api::NodeInventory& inv) {
  // No task reports: those go through the reporter, the moment they change.
  api::HeartbeatRequest req{cfg_.node, {}, std::nullopt, degraded_, refusals()};
  const bool whole = !held_ || !api::same_but_readings(held_->first, inv);
  if (whole)
    req.inventory = inv;
  else
    req.readings = api::HeartbeatReadings{held_->second, api::readings_of(inv)};
  auto r = hb_api_.heartbeat(req);
  // What the scheduler now holds: the inventory just sent, when it answered a tag for
  // it; after a failure (409: it holds another one; a scheduler that takes no
  // readings; a lost connection), the next heartbeat sends it whole.
  if (!r.ok() || r->inventory_tag == 0)
    held_.reset();
  else if (whole)
    held_.emplace(inv, r->inventory_tag);
  if (!r.ok()) {
    // 400: a scheduler (an older leader) that takes no readings.
    if (!whole && (r.error().code == ErrorCode::conflict || r.error().code == ErrorCode::invalid_argument)) {
      spdlog::info("heartbeat with readings: {}; sending the whole inventory", r.error().message);
      return heartbeat_once(inv);
    }
    if (r.error().code != ErrorCode::not_found) return r.error();
    spdlog::warn("heartbeat: the scheduler does not know node {}; registering again", cfg_.node);
    return false;
  }
  // Admitted or not, the answer shows the scheduler alive; only its acks are at stake.
  const bool current = admit(r->epoch, "a heartbeat answer");
  if (!r->acknowledged.empty() && current) {
    spdlog::debug("scheduler acknowledged {} task(s) in a heartbeat answer", r->acknowledged.size());
    tasks_.acknowledge(r->acknowledged);
  }
  return true;
}

void Agent::start_local_checks() {
  if (!inventory_read_.valid()) inventory_read_ = std::async(std::launch::async, [this] { return inventory_.read(); });
  if (!probe_.valid())
    probe_ = std::async(std::launch::async,
                        [this] { return cfg_.probe_state_dir ? cfg_.probe_state_dir() : tasks_.probe_state_dir(); });
}

std::optional<api::NodeInventory> Agent::refresh_inventory(steady_clock::time_point deadline) {
  if (inventory_read_.wait_until(deadline) != std::future_status::ready) {
    if (!inventory_slow_)
      spdlog::warn("reading inventory takes over {} ms: heartbeats carry the last inventory until it ends",
                   cfg_.inventory_wait.count());
    inventory_slow_ = true;
    MutexLock lock(mu_);
    return last_inv_;
  }
  inventory_slow_ = false;
  auto inv = inventory_read_.get();
  MutexLock lock(mu_);
  if (inv) {
    last_inv_ = *inv;
    last_inv_->labels = cfg_.labels;
  } else {
    spdlog::error("reading inventory: {}", inv.error().message);
    // The vendor tool failed (hung, crashed, garbage): keep the last known cards
    // but report them unhealthy, so the scheduler stops placing here; running
    // tasks are left alone. The next good read restores them.
    if (last_inv_)
      for (auto& d : last_inv_->devices) {
        d.healthy = false;
        d.health_reason = "reading inventory: " + inv.error().message;
      }
  }
  return last_inv_;
}

std::string Agent::probe_state_dir(steady_clock::time_point deadline) {
  if (probe_.wait_until(deadline) != std::future_status::ready) {
    std::string problem =
        "agent state dir: a write has not ended after " + std::to_string(cfg_.inventory_wait.count()) + " ms";
    if (!probe_slow_) spdlog::error("{}: reported degraded until it ends", problem);
    probe_slow_ = true;
    return problem;
  }
  if (probe_slow_) spdlog::info("agent state dir: the slow write ended");
  probe_slow_ = false;
  return probe_.get();
}

milliseconds Agent::register_once(const api::NodeInventory& inv, Backoff& backoff) {
  auto r =
      hb_api_.register_node({cfg_.node, cfg_.address, cfg_.agent_port, inv, tasks_.reports(), degraded_, refusals()});
  if (r.ok() && !admit(r->epoch, "a registration")) {
    const milliseconds wait = backoff.next();
    notifier_.status("refusing scheduler " + cfg_.scheduler_url + " at an old leader epoch, " +
                     std::to_string(tasks_.running_count()) + " tasks running");
    return wait;
  }
  if (!r.ok()) {
    const milliseconds wait = backoff.next();
    spdlog::warn("register with {}: {} (retry in {} ms)", cfg_.scheduler_url, r.error().message, wait.count());
    return wait;
  }
  backoff.reset();
  if (r->inventory_tag != 0)
    held_.emplace(inv, r->inventory_tag);
  else
    held_.reset();
  if (cfg_.on_scheduler_key) cfg_.on_scheduler_key(r->scheduler_key);
  const milliseconds interval = cfg_.heartbeat_interval.value_or(seconds(r->heartbeat_interval_s));
  spdlog::info("registered with {} as {} (heartbeat every {} ms)", cfg_.scheduler_url, cfg_.node, interval.count());
  on_registered(interval);
  if (!ready_sent_) notifier_.ready();
  ready_sent_ = true;
  publish_status();
  return interval;
}

milliseconds Agent::heartbeat_step(const api::NodeInventory& inv, Backoff& backoff) {
  const auto known = heartbeat_once(inv);
  if (!known.ok()) {
    const milliseconds wait = backoff.next();
    spdlog::warn("heartbeat to {}: {} (retry in {} ms)", cfg_.scheduler_url, known.error().message, wait.count());
    notifier_.status("scheduler " + cfg_.scheduler_url + " unreachable, " + std::to_string(tasks_.running_count()) +
                     " tasks running");
    return wait;
  }
  if (!*known) {
    {
      MutexLock lock(mu_);
      registered_ = false;
    }
    cv_.notify_all();  // The reporter pauses until the registration (which carries the reports).
    return milliseconds(0);
  }
  backoff.reset();
  publish_status();
  MutexLock lock(mu_);
  return interval_;
}

void Agent::heartbeat_loop() {
  Backoff backoff(cfg_.backoff_base, cfg_.backoff_cap, cfg_.seed);
  for (;;) {
    progress_ns_ = clock_.steady_ns();
    // The vendor tool and the state dir's disk may each hang: neither holds a
    // heartbeat longer than inventory_wait (they run at once, on threads of their own).
    start_local_checks();
    const auto deadline = steady_clock::now() + cfg_.inventory_wait;
    const auto inv = refresh_inventory(deadline);
    degraded_ = probe_state_dir(deadline);  // Again before every heartbeat: it ends once writes succeed.
    bool registered;
    {
      MutexLock lock(mu_);
      registered = registered_;
      degraded_sent_ = degraded_;
    }
    milliseconds wait;
    if (!inv)
      wait = backoff.next();
    else if (!registered)
      wait = register_once(*inv, backoff);
    else
      wait = heartbeat_step(*inv, backoff);
    // Degraded: probe (and tell) again every second, so a freed disk is used at once.
    if (!degraded_.empty()) wait = std::min(wait, kDegradedProbe);
    if (wait.count() > 0 && !wait_for(wait)) return;
    MutexLock lock(mu_);
    if (stopping_) return;
  }
}

void Agent::run() {
  std::thread poller([this] { poll_loop(); });
  std::thread reporter([this] { report_loop(); });
  std::thread events;
  if (events_) events = std::thread([this] { event_loop(); });
  std::thread watchdog;
  if (auto period = notifier_.watchdog_period()) watchdog = std::thread([this, p = *period] { watchdog_loop(p); });
  heartbeat_loop();
  poller.join();
  reporter.join();
  if (events.joinable()) events.join();
  if (watchdog.joinable()) watchdog.join();
}

void Agent::poll_loop() {
  Backoff backoff(cfg_.backoff_base, cfg_.backoff_cap, cfg_.seed + 1);
  std::mt19937_64 rng(cfg_.seed + 2);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int64_t version = 0;
  for (;;) {
    std::optional<api::NodeInventory> inv;
    {
      MutexLock lock(mu_);
      cv_.wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || registered_; });
      if (stopping_) return;
      inv = last_inv_;
    }
    auto r = poll_api_.desired_state(cfg_.node, version, cfg_.long_poll_wait_s);
    if (r.ok() && !admit(r->epoch, "assignments")) {
      // An old leader's word: nothing is started or killed. Ask again after a pause;
      // meanwhile the new leader's lease makes the old one step down.
      const auto wait = backoff.next();
      MutexLock lock(mu_);
      if (cv_.wait_for(mu_, wait, [&]() REQUIRES(mu_) { return stopping_; })) return;
      continue;
    }
    if (r.ok()) {
      backoff.reset();
      const bool changed = r->version != version;
      version = r->version;
      tasks_.apply(*r, *inv);
      // A changed answer started or stopped tasks (or failed to start them): report at
      // once. An unchanged one (a poll's timeout, or one shed every few seconds) did not.
      if (changed) mark_reports_dirty();
      if (auto problem = tasks_.state_dir_problem(); !problem.empty()) {
        MutexLock lock(mu_);
        if (problem != degraded_sent_) {  // A launch found the state dir unwritable.
          wake_heartbeat_ = true;
          cv_.notify_all();
        }
      }
      if (r->poll_after_ms > 0) {
        // The scheduler holds as many long polls as it can: come back later, with
        // jitter (0.75..1.25x) so the nodes told so at once do not return together.
        const auto wait = milliseconds(r->poll_after_ms) * (0.75 + 0.5 * unit(rng));
        spdlog::debug("scheduler busy with long polls: polling again in {} ms",
                      duration_cast<milliseconds>(wait).count());
        MutexLock lock(mu_);
        if (cv_.wait_for(mu_, wait, [&]() REQUIRES(mu_) { return stopping_; })) return;
      }
      continue;
    }
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    auto wait = backoff.next();
    spdlog::warn("long poll for assignments: {} (retry in {} ms)", r.error().message, wait.count());
    MutexLock lock(mu_);
    cv_.wait_for(mu_, wait, [&]() REQUIRES(mu_) { return stopping_; });
    if (stopping_) return;
  }
}

void Agent::watchdog_loop(microseconds period) {
  for (;;) {
    {
      MutexLock lock(mu_);
      if (cv_.wait_for(mu_, period, [&]() REQUIRES(mu_) { return stopping_; })) return;
    }
    // Ping only while the heartbeat loop is not stuck (an iteration is bounded by
    // HTTP and inventory timeouts, well under a minute).
    if (clock_.steady_ns() - progress_ns_.load() < duration_cast<nanoseconds>(minutes(2)).count()) notifier_.watchdog();
  }
}

}  // namespace tessel::agent
