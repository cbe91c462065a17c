#include "tessel/agent/agent.hpp"

#include <spdlog/spdlog.h>

#include <random>
#include <thread>

namespace tessel::agent {

using namespace std::chrono;

static int64_t steady_ns() { return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count(); }

Agent::Agent(AgentConfig cfg, SchedulerApi& heartbeat_api, SchedulerApi& poll_api, InventorySource& inventory,
             TaskManager& tasks, Notifier& notifier)
    : cfg_(std::move(cfg)),
      hb_api_(heartbeat_api),
      poll_api_(poll_api),
      inventory_(inventory),
      tasks_(tasks),
      notifier_(notifier) {}

void Agent::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  poll_api_.cancel();
  hb_api_.cancel();
}

void Agent::kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

bool Agent::wait_for(milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_ || kicked_; });
  kicked_ = false;
  return !stopping_;
}

void Agent::publish_status() {
  notifier_.status("registered with " + cfg_.scheduler_url + ", " + std::to_string(tasks_.running_count()) +
                   " tasks running");
}

bool Agent::heartbeat_once(const api::NodeInventory& inv) {
  api::HeartbeatRequest req{cfg_.node, inv, tasks_.reports()};
  auto r = hb_api_.heartbeat(req);
  if (r.not_found()) {
    spdlog::warn("heartbeat: the scheduler does not know node {}; registering again", cfg_.node);
    return false;
  }
  if (!r.ok()) throw std::runtime_error(r.error);
  if (!r.value->acknowledged.empty()) spdlog::debug("scheduler acknowledged {} task(s)", r.value->acknowledged.size());
  tasks_.acknowledge(r.value->acknowledged);
  return true;
}

void Agent::run() {
  Backoff backoff(cfg_.backoff_base, cfg_.backoff_cap, cfg_.seed);
  std::thread poller([this] { poll_loop(); });
  std::thread watchdog;
  if (auto period = notifier_.watchdog_period()) watchdog = std::thread([this, p = *period] { watchdog_loop(p); });
  bool ready_sent = false;
  milliseconds interval = cfg_.heartbeat_interval.value_or(seconds(5));
  for (;;) {
    progress_ns_ = steady_ns();
    auto inv = inventory_.read();
    if (inv) {
      std::lock_guard lock(mu_);
      last_inv_ = *inv;
    } else {
      spdlog::error("reading inventory: {}", inv.error().message);
      // The vendor tool failed (hung, crashed, garbage): keep the last known cards
      // but report them unhealthy, so the scheduler stops placing here; running
      // tasks are left alone. The next good read restores them.
      std::lock_guard lock(mu_);
      if (last_inv_)
        for (auto& d : last_inv_->devices) {
          d.healthy = false;
          d.health_reason = "reading inventory: " + inv.error().message;
        }
    }
    std::optional<api::NodeInventory> current;
    bool registered;
    {
      std::lock_guard lock(mu_);
      current = last_inv_;
      registered = registered_;
    }
    milliseconds wait = interval;
    if (!current) {
      wait = backoff.next();
    } else if (!registered) {
      auto r = hb_api_.register_node({cfg_.node, cfg_.address, cfg_.agent_port, *current, tasks_.reports()});
      if (r.ok()) {
        backoff.reset();
        interval = cfg_.heartbeat_interval.value_or(seconds(r.value->heartbeat_interval_s));
        spdlog::info("registered with {} as {} (heartbeat every {} ms)", cfg_.scheduler_url, cfg_.node,
                     interval.count());
        {
          std::lock_guard lock(mu_);
          registered_ = true;
        }
        cv_.notify_all();
        if (!ready_sent) notifier_.ready();
        ready_sent = true;
        publish_status();
        wait = milliseconds(0);  // Heartbeat right away: reports may be acknowledged.
      } else {
        wait = backoff.next();
        spdlog::warn("register with {}: {} (retry in {} ms)", cfg_.scheduler_url, r.error, wait.count());
      }
    } else {
      try {
        if (!heartbeat_once(*current)) {
          std::lock_guard lock(mu_);
          registered_ = false;
          wait = milliseconds(0);
        } else {
          backoff.reset();
          publish_status();
        }
      } catch (const std::exception& e) {
        wait = backoff.next();
        spdlog::warn("heartbeat to {}: {} (retry in {} ms)", cfg_.scheduler_url, e.what(), wait.count());
        notifier_.status("scheduler " + cfg_.scheduler_url + " unreachable, " + std::to_string(tasks_.running_count()) +
                         " tasks running");
      }
    }
    if (wait.count() > 0 && !wait_for(wait)) break;
    std::lock_guard lock(mu_);
    if (stopping_) break;
  }
  poller.join();
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
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || registered_; });
      if (stopping_) return;
      inv = last_inv_;
    }
    auto r = poll_api_.desired_state(cfg_.node, version, cfg_.long_poll_wait_s);
    if (r.ok()) {
      backoff.reset();
      const bool changed = r.value->version != version;
      version = r.value->version;
      tasks_.apply(*r.value, *inv);
      // Report starts and stops promptly; an unchanged answer (a poll's timeout, or one
      // shed every few seconds) leaves reporting to the regular heartbeat.
      if (changed) kick();
      if (r.value->poll_after_ms > 0) {
        // The scheduler holds as many long polls as it can: come back later, with
        // jitter (0.75..1.25x) so the nodes told so at once do not return together.
        const auto wait = milliseconds(r.value->poll_after_ms) * (0.75 + 0.5 * unit(rng));
        spdlog::debug("scheduler busy with long polls: polling again in {} ms",
                      duration_cast<milliseconds>(wait).count());
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, wait, [&] { return stopping_; })) return;
      }
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    auto wait = backoff.next();
    spdlog::warn("long poll for assignments: {} (retry in {} ms)", r.error, wait.count());
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, wait, [&] { return stopping_; });
    if (stopping_) return;
  }
}

void Agent::watchdog_loop(microseconds period) {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, period, [&] { return stopping_; })) return;
    }
    // Ping only while the heartbeat loop is not stuck (an iteration is bounded by
    // HTTP and inventory timeouts, well under a minute).
    if (steady_ns() - progress_ns_.load() < duration_cast<nanoseconds>(minutes(2)).count()) notifier_.watchdog();
  }
}

}  // namespace tessel::agent
