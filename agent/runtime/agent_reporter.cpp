// The agent's reporter and task-event loops (see agent.hpp): how a task's start or end
// reaches the scheduler at once instead of with the next heartbeat.
#include <spdlog/spdlog.h>

#include "tessel/agent/agent.hpp"
#include "tessel/agent/report_policy.hpp"

namespace tessel::agent {

using namespace std::chrono;

void Agent::mark_reports_dirty() {
  {
    MutexLock lock(mu_);
    reports_dirty_ = true;
  }
  cv_.notify_all();
}

void Agent::registration_lost() {
  {
    MutexLock lock(mu_);
    registered_ = false;
    wake_heartbeat_ = true;  // Register now, not after the rest of an interval.
  }
  cv_.notify_all();
}

void Agent::event_loop() {
  // A datagram says "a task changed": the reporter rereads every task's files. Or that
  // its result could not be written, and why: no file will say so.
  while (auto events = events_->wait()) {
    for (const auto& ev : *events) {
      spdlog::debug("task {}: its supervisor reports a change", ev.id);
      if (!ev.note.empty()) tasks_.result_not_recorded(ev.id, ev.note);
    }
    if (!events->empty()) mark_reports_dirty();
  }
}

// Waits while unregistered (a registration carries the reports itself), then until the
// reports are dirty (dirty) or a heartbeat interval passes (check), or the agent stops.
Agent::ReportTrigger Agent::wait_for_report_trigger() {
  MutexLock lock(mu_);
  for (;;) {
    cv_.wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || registered_; });
    if (stopping_) return ReportTrigger::stop;
    const bool woken =
        cv_.wait_for(mu_, interval_, [&]() REQUIRES(mu_) { return stopping_ || !registered_ || reports_dirty_; });
    if (stopping_) return ReportTrigger::stop;
    if (!woken) return ReportTrigger::check;
    if (!registered_) continue;
    reports_dirty_ = false;  // Cleared before reading the reports: a later change marks them again.
    return ReportTrigger::dirty;
  }
}

bool Agent::hold_off(milliseconds d) {
  MutexLock lock(mu_);
  return !cv_.wait_for(mu_, d, [&]() REQUIRES(mu_) { return stopping_; });
}

void Agent::report_loop() {
  Backoff backoff(cfg_.backoff_base, cfg_.backoff_cap, cfg_.seed + 3);
  std::optional<std::vector<api::TaskReport>> accepted;  // What the scheduler holds from us, as far as we know.
  std::optional<milliseconds> pause;                     // After a failure: wait this long, whatever changes.
  for (;;) {
    // A scheduler that fails (or that keeps forgetting us, or lacks the report route
    // and answers 404) is not asked again on every task change: back off first.
    if (pause && !hold_off(*pause)) return;
    pause.reset();
    const ReportTrigger trigger = wait_for_report_trigger();
    if (trigger == ReportTrigger::stop) return;
    auto reports = tasks_.reports();
    if (trigger == ReportTrigger::check && !periodic_report_due(reports, accepted)) continue;

    auto r = report_api_.report({cfg_.node, reports});
    if (r.ok() && !admit(r->epoch, "a report's acknowledgements")) {
      pause = backoff.next();  // An old leader's acks: forget nothing; send again to the new one.
      mark_reports_dirty();
    } else if (r.ok()) {
      backoff.reset();
      if (!r->acknowledged.empty()) spdlog::debug("scheduler acknowledged {} task(s)", r->acknowledged.size());
      tasks_.acknowledge(r->acknowledged);
      accepted = without_acknowledged(std::move(reports), r->acknowledged);
      publish_status();  // The running count changed, most likely.
    } else if (r.error().code == ErrorCode::not_found) {
      pause = backoff.next();
      spdlog::warn("report: the scheduler does not know node {}; registering again", cfg_.node);
      registration_lost();  // The registration carries the reports, and marks them dirty.
    } else {
      pause = backoff.next();
      spdlog::warn("report to {}: {} (retry in {} ms)", cfg_.scheduler_url, r.error().message, pause->count());
      mark_reports_dirty();  // Sent again once the pause is over.
    }
  }
}

}  // namespace tessel::agent
