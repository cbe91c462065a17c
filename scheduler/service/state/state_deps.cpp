// ClusterState: job dependencies (JobSpec after_ok, after_any, after_not_ok).
// A pending job with a dependency not yet met waits in the waiting queue, where neither
// placement nor backfill sees it. Whatever ends a job goes through
// commit_locked(), which first calls resolve_dependents_locked(): in the same
// Txn, dependents that can now never start are cancelled (and theirs, in turn),
// and those whose dependencies are all met move to the pending queue once it committed.
// History pruning (state_history.cpp) never removes a job that a job not yet ended
// depends on, so these checks always find it; a job already pruned is unknown to a
// new submission (400 naming the field).
#include <array>
#include <utility>

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
struct Rule {
  const char* field;
  const std::vector<std::string>* ids;
  bool (*met)(api::JobState ended);  // Whether a dependency that ended so lets the job start.
};

std::array<Rule, 3> rules(const api::JobSpec& spec) {
  return {Rule{"after_ok", &spec.after_ok, [](api::JobState s) { return s == api::JobState::succeeded; }},
          Rule{"after_any", &spec.after_any, [](api::JobState) { return true; }},
          Rule{"after_not_ok", &spec.after_not_ok, [](api::JobState s) { return s != api::JobState::succeeded; }}};
}

std::string ended_how(api::JobState s) { return s == api::JobState::cancelled ? "was cancelled" : api::to_string(s); }
}  // namespace

ClusterState::DepCheck ClusterState::check_dependencies_locked(
    const api::JobSpec& spec, const std::map<std::string, api::JobState>& changing) const {
  std::string unmet;
  for (const Rule& rule : rules(spec)) {
    for (const auto& id : *rule.ids) {
      std::optional<api::JobState> st;
      if (auto c = changing.find(id); c != changing.end()) {
        st = c->second;
      } else if (auto it = jobs_.find(job_key(id)); it != jobs_.end() && it->second.job.id == id) {
        st = it->second.job.state;
      }
      if (!st) return {DepCheck::Verdict::never, "dependency " + id + " is unknown"};
      if (!api::is_terminal(*st)) {
        if (unmet.empty()) unmet = id;
      } else if (!rule.met(*st)) {
        return {DepCheck::Verdict::never, "dependency " + id + " " + ended_how(*st)};
      }
    }
  }
  if (unmet.empty()) return {};
  return {DepCheck::Verdict::waiting, "waiting for " + unmet};
}

Status ClusterState::validate_dependencies_locked(const api::JobSpec& spec, const std::string& self) const {
  for (const Rule& rule : rules(spec)) {
    for (const auto& id : *rule.ids) {
      auto it = jobs_.find(job_key(id));
      if (id != self && it != jobs_.end() && it->second.job.id == id) continue;
      std::string message = rule.field;
      message += id == self ? ": a job cannot depend on itself" : ": unknown job " + id;
      return Error::invalid(std::move(message), rule.field);
    }
  }
  return ok_status();
}

void ClusterState::enqueue_locked(int64_t seq, JobEntry& entry, const DepCheck& check) {
  if (check.verdict == DepCheck::Verdict::waiting) {
    entry.job.reason = check.reason;
    jobs_.hold_back(seq);
    return;
  }
  jobs_.queue(seq);
  // A job that may preempt may start though no card is free.
  mark_dirty_locked(/*capacity=*/may_preempt_locked(entry.job.spec.project));
}

Status ClusterState::enqueue_restored_locked() {
  Txn txn;
  for (auto& [seq, entry] : jobs_) {
    if (entry.job.state != api::JobState::pending || jobs_.is_array(seq)) continue;  // A parent is never queued.
    if (!entry.job.held_by.empty()) {  // Held: out of every pass until released; its dependencies wait too.
      jobs_.hold(seq);
      continue;
    }
    const DepCheck check = check_dependencies_locked(entry.job.spec);
    if (check.verdict == DepCheck::Verdict::never)
      cancel_pending_locked(txn, entry, check.reason);
    else
      enqueue_locked(seq, entry, check);
  }
  if (!txn.batch.empty() && !commit_locked(txn, "restore"))
    return Error::unavailable("cancelling jobs whose dependencies can never be met: store write failed");
  return ok_status();
}

void ClusterState::resolve_dependents_locked(Txn& txn) {
  if (jobs_.waiting().empty()) return;
  std::map<std::string, api::JobState> changing;
  bool ends = false;
  for (const auto& j : txn.batch.jobs) {
    changing[j.id] = j.state;
    ends = ends || api::is_terminal(j.state);
  }
  if (!ends) return;
  // A job's dependencies are older than it (they existed when it was submitted), so
  // one pass in sequence order meets a cancellation before the jobs it dooms in turn.
  for (const auto& [seq, e] : jobs_.waiting()) {
    if (changing.count(e->job.id)) continue;  // This Txn ends it already (a user's cancel).
    const DepCheck check = check_dependencies_locked(e->job.spec, changing);
    if (check.verdict == DepCheck::Verdict::never) {
      cancel_pending_locked(txn, *e, check.reason);
      changing[e->job.id] = api::JobState::cancelled;
    } else if (check.verdict == DepCheck::Verdict::ready) {
      txn.apply.push_back([this, seq = seq]() REQUIRES(mu_) { release_waiting_locked(seq); });
    } else if (check.reason != e->job.reason) {  // Now waits for another one: in memory, as a pass's reasons.
      txn.apply.push_back([entry = e, reason = check.reason]() { entry->job.reason = reason; });
    }
  }
}

void ClusterState::release_waiting_locked(int64_t seq) {
  auto it = jobs_.waiting().find(seq);
  if (it == jobs_.waiting().end()) return;
  JobEntry& entry = *it->second;
  jobs_.dequeue(seq);
  entry.job.reason.clear();
  entry.queued_at_ms = clock_.now_ms();  // Queue wait counts from when it could start.
  log_change(entry.job, "dependencies met");
  enqueue_locked(seq, entry, DepCheck{});
}

}  // namespace tessel::scheduler
