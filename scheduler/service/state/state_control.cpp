// ClusterState: a user's control of a job after its submission (issue 31): hold,
// release, signal, update (PATCH) and requeue. Each is the job's owner's or an admin's (403 otherwise), answers 409 on
// a job in the wrong state, and writes an event naming who asked (api::JobEvent::by) in the job's stored history, in
// the same write as the change.
#include <algorithm>
#include <tuple>

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
  if (jobs_.is_array(*key)) {
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
  if (jobs_.is_array(*key)) {
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
    if (who.role != Role::admin && by != who.name) {
      std::string why = "job " + id;
      why += " was held by " + by;
      why += ": only " + by;
      why += " or an admin may release it";
      return Error::forbidden(std::move(why));
    }
    release_locked(txn, k, who.name);
  }
  if (!commit_locked(txn, "release")) return storage_unavailable("the release");
  return view_locked(*key, jobs_.at(*key));
}

void ClusterState::signal_locked(Txn& txn, int64_t key, const std::string& name, const std::string& by,
                                 const std::string& why) {
  api::Job nj = jobs_.at(key).job;
  const int id = nj.signals.empty() ? 1 : nj.signals.back().id + 1;
  if (nj.signals.size() >= api::kMaxJobSignals) nj.signals.erase(nj.signals.begin());
  nj.signals.push_back(api::JobSignal{id, name});
  api::JobEvent ev = control_event(clock_.now_ms(), "signalled", nj, by);
  ev.reason = why.empty() ? "SIG" + name + " to every rank" : why;
  for (const auto& a : nj.allocations)
    if (std::find(ev.nodes.begin(), ev.nodes.end(), a.node) == ev.nodes.end()) ev.nodes.push_back(a.node);
  api::add_job_event(nj.events, std::move(ev));
  txn.batch.jobs.push_back(nj);
  txn.apply.push_back([this, nj, key]() REQUIRES(mu_) {
    jobs_.at(key).job = nj;
    // The nodes' long polls answer: their agents deliver it.
    for (const auto& a : nj.allocations) bump_locked(a.node);
    log_change(nj, "signalled SIG" + nj.signals.back().name);
  });
}

Result<api::Job> ClusterState::signal(const std::string& id, const std::string& name, const Principal& who) {
  MutexLock lk(mu_);
  auto key = controlled_job_locked(id, who);
  if (!key) return key.error();
  Txn txn;
  if (jobs_.is_array(*key)) {
    for (auto it = jobs_.upper_bound(*key); it != jobs_.end() && parent_key(it->first) == *key; ++it)
      if (it->second.job.state == api::JobState::running) signal_locked(txn, it->first, name, who.name);
    if (txn.batch.jobs.empty())
      return Error::conflict("array " + id + " has no running elements: only running jobs can be signalled");
  } else {
    const api::Job& j = jobs_.at(*key).job;
    if (j.state != api::JobState::running)
      return Error::conflict("job " + id + " is " + api::to_string(j.state) + ": only a running job can be signalled");
    signal_locked(txn, *key, name, who.name);
  }
  if (!commit_locked(txn, "signal")) return storage_unavailable("the signal");
  return view_locked(*key, jobs_.at(*key));
}

Status ClusterState::check_update_locked(const api::Job& j, const api::JobUpdate& u, const Principal& who) const {
  if (j.state != api::JobState::pending)
    return Error::conflict("job " + j.id + " is " + api::to_string(j.state) + ": only a pending job can be updated");
  const bool admin = who.role == Role::admin;
  // As Slurm's: a user may lower a job's priority and shorten its time limit, not the reverse.
  if (u.priority && *u.priority > j.spec.priority && !admin)
    return Error::forbidden("priority: only an admin may raise a job's priority (now " +
                            std::to_string(j.spec.priority) + ")");
  if (u.time_limit_s && j.spec.time_limit_s && *u.time_limit_s > *j.spec.time_limit_s && !admin)
    return Error::forbidden("time_limit_s: only an admin may lengthen a job's time limit (now " +
                            std::to_string(*j.spec.time_limit_s) + ")");
  if (u.time_limit_s && j.spec.signal && j.spec.signal->before_s > *u.time_limit_s)
    return Error::invalid(
        "time_limit_s: shorter than the warning signal's before_s (" + std::to_string(j.spec.signal->before_s) + ")",
        "time_limit_s");
  return ok_status();
}

Result<api::Job> ClusterState::update(const std::string& id, const api::JobUpdate& u, const Principal& who) {
  MutexLock lk(mu_);
  auto key = controlled_job_locked(id, who);
  if (!key) return key.error();
  if (jobs_.is_array(*key))
    return Error::conflict("job " + id + " is an array: update its elements (" + id + "_N) one by one");
  const JobEntry& e = jobs_.at(*key);
  if (auto s = check_update_locked(e.job, u, who); !s) return s.error();
  api::Job nj = e.job;
  std::string what;
  auto note = [&what](const std::string& s) { what += (what.empty() ? "" : ", ") + s; };
  if (u.priority) {
    nj.spec.priority = *u.priority;
    note("priority " + std::to_string(*u.priority));
  }
  if (u.time_limit_s) {
    nj.spec.time_limit_s = u.time_limit_s;
    note("time_limit_s " + std::to_string(*u.time_limit_s));
  }
  if (u.name) {
    nj.spec.name = nj.name = *u.name;
    note("name");
  }
  for (auto [list, field, out] : {std::tuple{&u.after_ok, "after_ok", &nj.spec.after_ok},
                                  std::tuple{&u.after_any, "after_any", &nj.spec.after_any},
                                  std::tuple{&u.after_not_ok, "after_not_ok", &nj.spec.after_not_ok}}) {
    if (!*list) continue;
    *out = **list;
    note(field);
  }
  if (auto s = validate_dependencies_locked(nj.spec, nj.id); !s) return s.error();
  const DepCheck check = check_dependencies_locked(nj.spec);
  if (check.verdict == DepCheck::Verdict::never)
    return Error::conflict("job " + id + " could never start: " + check.reason);
  api::JobEvent ev = control_event(clock_.now_ms(), "updated", nj, who.name);
  ev.reason = what;
  api::add_job_event(nj.events, std::move(ev));
  Txn txn;
  txn.batch.jobs.push_back(nj);
  txn.apply.push_back([this, nj, k = *key, check]() REQUIRES(mu_) {
    JobEntry& entry = jobs_.at(k);
    entry.job = nj;
    log_change(nj, "updated");
    if (!nj.held_by.empty()) return;  // Held: its queue waits for the release.
    if (!nj.reason.empty() && check.verdict == DepCheck::Verdict::ready && jobs_.waiting().count(k))
      entry.job.reason.clear();
    enqueue_locked(k, entry, check);
    mark_dirty_locked();  // A lower priority or shorter limit may let another job start.
  });
  if (!commit_locked(txn, "update")) return storage_unavailable("the update");
  return view_locked(*key, jobs_.at(*key));
}

Result<api::Job> ClusterState::requeue(const std::string& id, const Principal& who) {
  MutexLock lk(mu_);
  auto key = controlled_job_locked(id, who);
  if (!key) return key.error();
  auto active = [](const api::Job& j) {
    return j.state == api::JobState::assigned || j.state == api::JobState::running;
  };
  Txn txn;
  if (jobs_.is_array(*key)) {
    for (auto it = jobs_.upper_bound(*key); it != jobs_.end() && parent_key(it->first) == *key; ++it)
      if (active(it->second.job))
        stop_job_locked(txn, it->second, api::JobState::pending, "", std::nullopt, true, "", who.name);
    if (txn.batch.jobs.empty())
      return Error::conflict("array " + id + " has no assigned or running elements to requeue");
  } else {
    const JobEntry& e = jobs_.at(*key);
    if (!active(e.job))
      return Error::conflict("job " + id + " is " + api::to_string(e.job.state) +
                             ": only an assigned or running job can be requeued");
    stop_job_locked(txn, e, api::JobState::pending, "", std::nullopt, true, "", who.name);
  }
  if (!commit_locked(txn, "requeue")) return storage_unavailable("the requeue");
  return view_locked(*key, jobs_.at(*key));
}

}  // namespace tessel::scheduler
