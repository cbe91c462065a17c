// ClusterState: job arrays (JobSpec `array`). A submission stores the parent and
// its N elements (one per index, keyed parent + index + 1) in one batch. Elements
// are ordinary jobs (queued, placed, retried, cancelled one by one); the parent is
// never queued. Its state follows its elements' (array_state()), and
// commit_locked() keeps it so: settle_locked() counts what a Txn does to elements
// and writes the parent in the same batch when its state changes, so dependencies
// on the parent see the whole array.
#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
size_t slot(api::JobState s) { return static_cast<size_t>(s); }

// The parent's state from its elements': pending while every element is pending;
// running while any is assigned or running, or some ended and others have yet to
// (so it does not flap to pending between one element's end and the next start);
// once all ended, succeeded if all succeeded, failed if any failed, else cancelled.
api::JobState array_state(const std::array<int, 6>& s, int count) {
  using api::JobState;
  if (s[slot(JobState::pending)] == count) return JobState::pending;
  if (s[slot(JobState::assigned)] + s[slot(JobState::running)] + s[slot(JobState::pending)] > 0)
    return JobState::running;
  if (s[slot(JobState::succeeded)] == count) return JobState::succeeded;
  if (s[slot(JobState::failed)] > 0) return JobState::failed;
  return JobState::cancelled;
}

// The parent's record for its elements' new counts.
api::Job parent_record(api::Job p, const std::array<int, 6>& s, int count, int64_t now) {
  using api::JobState;
  // No started_at: a parent holds no cards, and usage is counted by its elements.
  p.state = array_state(s, count);
  if (api::is_terminal(p.state)) {
    p.finished_at_ms = now;
    p.reason.clear();
    if (p.state != JobState::succeeded)
      p.reason = std::to_string(s[slot(JobState::failed)]) + " failed, " +
                 std::to_string(s[slot(JobState::cancelled)]) + " cancelled of " + std::to_string(count) + " elements";
  }
  return p;
}
}  // namespace

void ClusterState::cancel_array_locked(Txn& txn, int64_t key, const std::string& reason) {
  for (auto it = jobs_.upper_bound(key); it != jobs_.end() && parent_key(it->first) == key; ++it) {
    const JobEntry& e = it->second;
    if (api::is_terminal(e.job.state)) continue;
    if (e.job.state == api::JobState::pending)
      cancel_pending_locked(txn, e, reason);
    else
      stop_job_locked(txn, e, api::JobState::cancelled, reason, std::nullopt, false);
  }
  spdlog::info("array {} cancelled: {} elements not yet ended", make_job_id(key >> kArrayKeyBits),
               txn.batch.jobs.size());
}

void ClusterState::settle_locked(Txn& txn) {
  std::map<int64_t, ArrayChange> changes;
  size_t from = 0;
  for (;;) {
    const size_t before = txn.batch.jobs.size();
    update_arrays_locked(txn, from, changes);
    resolve_dependents_locked(txn);  // Sees the parents' new states.
    if (txn.batch.jobs.size() == before) return;
    from = before;  // Cancellations of dependents may end elements in turn.
  }
}

void ClusterState::update_arrays_locked(Txn& txn, size_t from, std::map<int64_t, ArrayChange>& changes) {
  if (!jobs_.has_arrays()) return;
  std::set<int64_t> touched;
  for (size_t i = from; i < txn.batch.jobs.size(); ++i) {
    const api::Job& nj = txn.batch.jobs[i];
    const int64_t key = job_key(nj.id);
    if (key < 0 || !is_element_key(key)) continue;
    auto old = jobs_.find(key);
    const int64_t pkey = parent_key(key);
    const ArrayCounts* info = jobs_.array(pkey);
    if (old == jobs_.end() || info == nullptr) continue;  // A new element: its submission counts it.
    if (old->second.job.state == nj.state) continue;
    auto [c, fresh] = changes.try_emplace(pkey);
    if (fresh) c->second.states = info->states;
    --c->second.states[slot(old->second.job.state)];
    ++c->second.states[slot(nj.state)];
    touched.insert(pkey);
  }
  const int64_t now = clock_.now_ms();
  for (int64_t pkey : touched) {
    ArrayChange& c = changes[pkey];
    const ArrayCounts& info = *jobs_.array(pkey);
    const api::Job& current = c.batch_index == std::string::npos ? jobs_.at(pkey).job : txn.batch.jobs[c.batch_index];
    std::optional<api::Job> np;
    if (array_state(c.states, info.count) != current.state) np = parent_record(current, c.states, info.count, now);
    if (np && c.batch_index == std::string::npos) {
      c.batch_index = txn.batch.jobs.size();
      txn.batch.jobs.push_back(*np);
    } else if (np) {
      txn.batch.jobs[c.batch_index] = *np;
    }
    txn.apply.push_back([this, pkey, states = c.states, np]() REQUIRES(mu_) {
      if (ArrayCounts* counts = jobs_.array(pkey)) counts->states = states;
      if (!np) return;
      jobs_.at(pkey).job = *np;
      log_change(*np, "elements changed");
    });
  }
}

void ClusterState::restore_arrays_locked() {
  for (auto& [key, e] : jobs_) {
    if (!is_element_key(key)) {
      if (e.job.spec.array) jobs_.add_array(key, e.job.spec.array->count, e.job.spec.array->parallel);
      continue;
    }
    ArrayCounts* info = jobs_.array(parent_key(key));  // The parent sorts before its elements.
    if (info == nullptr) continue;
    ++info->states[slot(e.job.state)];
    // Stored whole by an older scheduler: shared in memory from now on (and so written).
    if (!e.job.spec_shared) {
      api::Job shared = e.job;
      api::share_parent_spec(shared);
      if (whole_spec_locked(key, shared) == e.job.spec) e.job = std::move(shared);
    }
  }
}

api::JobSpec ClusterState::whole_spec_locked(int64_t key, const api::Job& j) const {
  api::JobSpec spec = j.spec;
  if (!j.spec_shared) return spec;
  // A parent pruned before its last elements leaves them without a command to show.
  if (auto p = jobs_.find(parent_key(key)); p != jobs_.end()) {
    spec.command = p->second.job.spec.command;
    spec.env = p->second.job.spec.env;
    spec.workdir = p->second.job.spec.workdir;
  }
  return spec;
}

api::Job ClusterState::view_locked(int64_t key, const JobEntry& e) const {
  api::Job j = view_of(e);
  if (j.spec_shared) {
    j.spec = whole_spec_locked(key, j);
    j.spec_shared = false;
  }
  const ArrayCounts* info = jobs_.array(key);
  if (info == nullptr) return j;
  api::ArrayView view{info->count, info->parallel, {}};
  for (auto st : {api::JobState::pending, api::JobState::assigned, api::JobState::running, api::JobState::succeeded,
                  api::JobState::failed, api::JobState::cancelled})
    view.states[st] = info->states[slot(st)];
  j.array = std::move(view);
  return j;
}

bool ClusterState::array_gate_locked(int64_t key, JobEntry& e, ArrayGate& gate) {
  const int64_t pkey = parent_key(key);
  if (pkey != gate.parent) {
    gate.parent = pkey;
    gate.reason.clear();
    const ArrayCounts* info = jobs_.array(pkey);
    gate.slots = info == nullptr ? 1 << 30
                                 : info->parallel - info->states[slot(api::JobState::assigned)] -
                                       info->states[slot(api::JobState::running)];
  }
  if (gate.slots > 0) {
    --gate.slots;
    return true;
  }
  if (gate.reason.empty()) {
    gate.reason = "array " + make_job_id(pkey >> kArrayKeyBits) + " at its parallel limit of " +
                  std::to_string(jobs_.array(pkey)->parallel);
  }
  e.queue_position = 0;
  e.estimated_start_ms.reset();
  if (e.job.reason != gate.reason) {
    e.job.reason = gate.reason;
    gate.reasons_changed = true;
  }
  return false;
}

}  // namespace tessel::scheduler
