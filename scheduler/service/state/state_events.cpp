// ClusterState: each job's state history (api::JobEvent), kept in the job's own
// stored document, so it needs no table and survives restarts with the job.
// commit_locked() calls record_events_locked() last, once the Txn is complete: it
// compares each job the batch writes with the job as it was (in memory, or earlier
// in the same batch) and appends an event for each change of state or attempt, and
// one when a job's reason becomes a new "pulling image REF on NODE".
// Pending reasons that change with every pass are not stored (the pass writes
// nothing for them) and so are not events; the reason a job waited with at
// submission is in its "submitted" event.
#include <algorithm>
#include <map>
#include <memory>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

std::vector<std::string> nodes_of(const api::Job& j) {
  std::vector<std::string> out;
  for (const auto& a : j.allocations)
    if (std::find(out.begin(), out.end(), a.node) == out.end()) out.push_back(a.node);
  return out;
}

const std::string kRequeuedBy = "requeued by ";  // stop_job_locked's reason for a user's requeue.

// A job whose reason became a (new) pull of its image: a node started pulling.
std::optional<api::JobEvent> pull_started(const api::Job& before, const api::Job& after, int64_t now) {
  if (after.attempt != before.attempt || after.reason == before.reason ||
      after.reason.rfind(ClusterState::kPullingImageReason, 0) != 0)
    return std::nullopt;
  return api::JobEvent{now, "pulling_image", after.state, after.attempt, nodes_of(after), after.reason, {}, {}};
}

// The event that takes `before` to `after`, if their state or attempt differ.
std::optional<api::JobEvent> transition(const api::Job& before, const api::Job& after, int64_t now) {
  if (before.state == after.state && before.attempt == after.attempt) return std::nullopt;
  api::JobEvent e;
  e.at_ms = now;
  e.state = after.state;
  e.reason = after.reason;
  if (after.attempt != before.attempt) {  // The attempt before ended and the job went back to pending.
    e.event = after.preemptions > before.preemptions ? "preempted" : "requeued";
    if (after.requeues > before.requeues && after.reason.rfind(kRequeuedBy, 0) == 0)  // A user's requeue.
      e.by = after.reason.substr(kRequeuedBy.size());
    e.attempt = before.attempt;
    e.nodes = nodes_of(before);
    return e;
  }
  e.event = api::to_string(after.state);
  e.attempt = after.attempt;
  e.nodes = nodes_of(api::is_terminal(after.state) ? before : after);
  if (api::is_terminal(after.state)) e.exit_code = after.exit_code;
  return e;
}

}  // namespace

api::JobEvent ClusterState::submitted_event(const api::Job& job) {
  const std::string why = job.state == api::JobState::pending ? job.reason : "";
  return api::JobEvent{job.submitted_at_ms, "submitted", api::JobState::pending, job.attempt, {}, why, {}};
}

void ClusterState::record_events_locked(Txn& txn) {
  const int64_t now = clock_.now_ms();
  std::map<int64_t, size_t> latest;  // Key -> index in the batch of its latest record so far.
  std::vector<std::pair<int64_t, std::vector<api::JobEvent>>> changed;
  for (size_t i = 0; i < txn.batch.jobs.size(); ++i) {
    api::Job& nj = txn.batch.jobs[i];
    const int64_t key = job_key(nj.id);
    const api::Job* before = nullptr;
    if (auto l = latest.find(key); l != latest.end()) {
      before = &txn.batch.jobs[l->second];
      nj.events = before->events;  // The record was made from the job in memory.
    } else if (auto it = jobs_.find(key); it != jobs_.end() && it->second.job.id == nj.id) {
      before = &it->second.job;
    }
    latest[key] = i;
    if (!before) {
      // A new job (a submission with dependencies: its reason is set by now); one
      // that can never start (a dependency that failed) ends at once.
      nj.events.assign(1, submitted_event(nj));
      if (nj.state != api::JobState::pending)
        api::add_job_event(nj.events,
                           api::JobEvent{now, api::to_string(nj.state), nj.state, nj.attempt, {}, nj.reason, {}});
      changed.emplace_back(key, nj.events);
      continue;
    }
    auto e = transition(*before, nj, now);
    auto pull = pull_started(*before, nj, now);  // After the job's start, when both.
    if (!e && !pull) continue;
    if (e) api::add_job_event(nj.events, std::move(*e));
    if (pull) api::add_job_event(nj.events, std::move(*pull));
    changed.emplace_back(key, nj.events);
  }
  if (changed.empty()) return;
  // Runs after the other apply steps, which file the batch's records (made before
  // these events) in memory.
  auto moved = std::make_shared<decltype(changed)>(std::move(changed));
  txn.apply.push_back([this, moved]() REQUIRES(mu_) {
    for (auto& [key, events] : *moved)
      if (auto it = jobs_.find(key); it != jobs_.end()) it->second.job.events = std::move(events);
  });
}

std::optional<std::vector<api::JobEvent>> ClusterState::job_events(const std::string& id) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(job_key(id));
  if (it == jobs_.end() || it->second.job.id != id) return std::nullopt;
  return it->second.job.events;
}

}  // namespace tessel::scheduler
