// ClusterState: a user's control of a job after its submission (issue 31): hold and
// release. Each is the job's owner's or an admin's (403 otherwise), answers 409 on a
// job in the wrong state, and writes an event naming who asked (api::JobEvent::by)
// in the job's stored history, in the same write as the change.
#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
api::JobEvent control_event(int64_t now, const char* event, const api::Job& j, const std::string& by) {
  api::JobEvent ev;
  ev.at_ms = now;
  ev.event = event;
  ev.state = j.state;
  ev.attempt = j.attempt;
  ev.reason = j.reason;
  ev.by = by;
  return ev;
}
}  // namespace

Result<int64_t> ClusterState::controlled_job_locked(const std::string& id, const Principal& who) const {
  auto it = jobs_.find(job_key(id));
  if (it == jobs_.end() || it->second.job.id != id) return Error::not_found("job " + id + " not found");
  if (who.role != Role::admin && it->second.job.user != who.name)
    return Error::forbidden("job " + id + " belongs to another user");
  return it->first;
}

void ClusterState::hold_locked(Txn& txn, int64_t key, const std::string& by) {
  api::Job nj = jobs_.at(key).job;
  nj.held_by = by;
  nj.reason = "held by " + by;
  api::add_job_event(nj.events, control_event(clock_.now_ms(), "held", nj, by));
  txn.batch.jobs.push_back(nj);
  txn.apply.push_back([this, nj, key]() REQUIRES(mu_) {
    JobEntry& e = jobs_.at(key);
    e.job = nj;
    e.queue_position = 0;
    e.estimated_start_ms.reset();
    jobs_.hold(key);
    log_change(nj, "held");
  });
}

void ClusterState::release_locked(Txn& txn, int64_t key, const std::string& by) {
  const JobEntry& e = jobs_.at(key);
  api::Job nj = e.job;
  nj.held_by.clear();
  nj.reason.clear();
  // Its dependencies were not looked at while it was held: one may have failed meanwhile.
  const DepCheck check = check_dependencies_locked(nj.spec);
  api::add_job_event(nj.events, control_event(clock_.now_ms(), "released", nj, by));
  if (check.verdict == DepCheck::Verdict::never) {  // Ends here, as at submission.
    nj.state = api::JobState::cancelled;
    nj.reason = check.reason;
    nj.finished_at_ms = clock_.now_ms();
    txn.batch.jobs.push_back(nj);
    txn.apply.push_back([this, nj, key]() REQUIRES(mu_) {
      jobs_.at(key).job = nj;
      jobs_.dequeue(key);
      log_change(nj, "released");
    });
    return;
  }
  txn.batch.jobs.push_back(nj);
  txn.apply.push_back([this, nj, key, check]() REQUIRES(mu_) {
    JobEntry& entry = jobs_.at(key);
    entry.job = nj;
    entry.queued_at_ms = clock_.now_ms();
    jobs_.dequeue(key);
    log_change(nj, "released");
    enqueue_locked(key, entry, check);
  });
}

Result<api::Job> ClusterState::hold(const std::string& id, const Principal& who) {
  MutexLock lk(mu_);
  auto key = controlled_job_locked(id, who);
  if (!key) return key.error();
  Txn txn;
  if (arrays_.count(*key)) {
    bool any_held = false;
    for (auto it = jobs_.upper_bound(*key); it != jobs_.end() && parent_key(it->first) == *key; ++it) {
      if (it->second.job.state != api::JobState::pending) continue;
      if (it->second.job.held_by.empty())
        hold_locked(txn, it->first, who.name);
      else
        any_held = true;
    }
    if (txn.batch.jobs.empty() && !any_held)
      return Error::conflict("array " + id + " has no pending elements: only pending elements can be held");
  } else {
    const api::Job& j = jobs_.at(*key).job;
    if (j.state != api::JobState::pending)
      return Error::conflict("job " + id + " is " + api::to_string(j.state) + ": only a pending job can be held");
    if (!j.held_by.empty()) return view_locked(*key, jobs_.at(*key));  // Held already: nothing to do.
    hold_locked(txn, *key, who.name);
  }
  if (!txn.batch.jobs.empty() && !commit_locked(txn, "hold")) return storage_unavailable("the hold");
  return view_locked(*key, jobs_.at(*key));
}

Result<api::Job> ClusterState::release(const std::string& id, const Principal& who) {
  MutexLock lk(mu_);
  auto key = controlled_job_locked(id, who);
  if (!key) return key.error();
  std::vector<int64_t> keys;
  if (arrays_.count(*key)) {
    for (auto it = jobs_.upper_bound(*key); it != jobs_.end() && parent_key(it->first) == *key; ++it)
      if (!it->second.job.held_by.empty()) keys.push_back(it->first);
  } else if (!jobs_.at(*key).job.held_by.empty()) {
    keys.push_back(*key);
  }
  if (keys.empty()) return Error::conflict("job " + id + " is not held");
  Txn txn;
  for (int64_t k : keys) {
    const std::string& by = jobs_.at(k).job.held_by;
    // As Slurm's: a user may not release what an admin (or another user) held.
    if (who.role != Role::admin && by != who.name)
      return Error::forbidden("job " + id + " was held by " + by + ": only " + by + " or an admin may release it");
    release_locked(txn, k, who.name);
  }
  if (!commit_locked(txn, "release")) return storage_unavailable("the release");
  return view_locked(*key, jobs_.at(*key));
}

}  // namespace tessel::scheduler
