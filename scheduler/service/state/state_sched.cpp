// ClusterState: the scheduling pass, the scheduler thread, liveness.
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
// A preempted job keeps "preempted by j-..." in front of why it still waits.
const std::string kPreempted = "preempted by ";

bool was_preempted(const std::string& reason) { return reason.rfind(kPreempted, 0) == 0; }

std::string pending_reason(const std::string& was, const std::string& now) {
  if (!was_preempted(was)) return now;
  return was.substr(0, was.find(';')) + "; " + now;
}
// The CPUs and memory per node the job asks, or the scheduler's defaults for them (0
// left: the node's share for its cards, which the allocator works out per node).
void ask_resources(const TaskDefaults& d, const api::JobSpec& spec, PendingJob& out) {
  out.cpus = spec.cpus;
  out.memory_mib = spec.memory_mib;
  if (spec.devices == 0) {
    if (out.cpus == 0) out.cpus = d.cpus_without_cards;
    if (out.memory_mib == 0) out.memory_mib = d.memory_mib_without_cards;
    return;
  }
  if (out.cpus == 0) out.cpus = d.cpus_per_card * spec.devices;
  if (out.memory_mib == 0) out.memory_mib = d.memory_mib_per_card * spec.devices;
}
}  // namespace

void ClusterState::schedule_pass() {
  MutexLock lk(mu_);
  if (jobs_.pending().empty() || stopping_) return;
  // Only submissions since a pass that left every card busy: nothing new can fit.
  // Real time: this only paces CPU use.
  if (!pacing_.begin_pass(std::chrono::steady_clock::now())) return;
  const int64_t t0 = clock_.steady_ns();
  const int64_t now = clock_.now_ms();
  PassPolicy policy = pass_policy_locked(now);
  // Jobs whose victims' cards are all free take them first; the others wait for theirs.
  std::vector<api::Job> claims_dropped;  // Written with this pass, before its placements.
  std::vector<Placement> ready = advance_preemptions_locked(policy, now, claims_dropped);
  std::vector<PendingJob> queue;
  std::vector<JobEntry*> entries;  // Parallel to queue.
  ArrayGate gate;
  pass_queue_locked(policy, queue, entries, gate);
  PassInput in = pass_input_locked(queue, policy, now);
  in.ready = std::move(ready);
  const PassPlan plan = plan_pass(alloc_, std::move(in));
  commit_pass_locked(plan, entries, std::move(claims_dropped), now);
  const bool reasons_changed = take_pending_reasons_locked(plan.result, queue, entries);
  // Not stored, but shown: the console shows why a job waits.
  if (reasons_changed || gate.reasons_changed) ++jobs_changes_;
  pacing_.end_pass(alloc_.any_free_card());
  counters_.scheduling_latency.observe(static_cast<double>(clock_.steady_ns() - t0) / 1e9);
}

void ClusterState::pass_queue_locked(const PassPolicy& policy, std::vector<PendingJob>& queue,
                                     std::vector<JobEntry*>& entries, ArrayGate& gate) {
  queue.reserve(jobs_.pending().size());
  entries.reserve(jobs_.pending().size());
  for (const auto& [seq, entry] : jobs_.pending()) {
    if (preempting_.contains(seq)) continue;
    if (is_element_key(seq) && !array_gate_locked(seq, *entry, gate)) continue;
    const api::Job& j = entry->job;
    queue.push_back(PendingJob{j.id, j.spec.devices, j.spec.nodes, j.spec.priority, seq, j.spec.time_limit_s,
                               j.spec.vendor, j.spec.model, j.spec.driver_version});
    ask_resources(opts_.task_defaults, j.spec, queue.back());
    if (!j.spec.constraints.empty()) queue.back().constraints = &j.spec.constraints;
    apply_policy(policy, j, queue.back());
    entries.push_back(entry);
  }
}

PassInput ClusterState::pass_input_locked(const std::vector<PendingJob>& queue, PassPolicy& policy, int64_t now) {
  PassInput in;
  in.queue = &queue;
  in.now_ms = now;
  in.limits = policy.limits.empty() ? nullptr : &policy.limits;
  in.master_port_lo = opts_.master_port_lo;
  in.master_port_hi = opts_.master_port_hi;
  // plan_pass() calls these before this function's caller lets go of mu_.
  in.address_of = [this](const std::string& node) REQUIRES(mu_) { return nodes_.at(node).rec.address; };
  in.ports_in_use = [this](const std::string& node) REQUIRES(mu_) {
    std::set<int> in_use;
    for (int64_t s : active_.on(node)) {
      const api::Job& o = jobs_.at(s).job;
      if (!o.allocations.empty() && o.allocations.front().node == node) in_use.insert(o.master_port);
    }
    return in_use;
  };
  in.preempt_min_runtime_ms = opts_.preempt_min_runtime_ms;
  in.running = [this, &policy]() REQUIRES(mu_) {
    std::vector<RunningJob> running;
    running.reserve(active_.size());
    for (int64_t seq : active_) {
      const api::Job& j = jobs_.at(seq).job;
      auto idx = policy.index.find(j.spec.project);
      running.push_back(RunningJob{j.id, idx == policy.index.end() ? -1 : idx->second, j.spec.preemptible,
                                   j.state == api::JobState::running ? j.started_at_ms : 0});
    }
    return running;
  };
  return in;
}

void ClusterState::commit_pass_locked(const PassPlan& plan, const std::vector<JobEntry*>& entries,
                                      std::vector<api::Job> claims_dropped, int64_t now) {
  // Where the pass leaves the jobs still pending: shown, not stored.
  for (uint32_t i : plan.result.order) {
    entries[i]->estimated_start_ms.reset();
    entries[i]->queue_position = plan.queue_positions[i];
  }
  for (const auto& start : plan.estimated_starts)
    if (auto it = jobs_.pending().find(job_key(start.job_id)); it != jobs_.pending().end())
      it->second->estimated_start_ms = start.at_ms;
  Txn txn;
  // Records whose preemption claim was dropped: stored without it, so a restart does
  // not resume it. First in the batch: a job placed in this pass is written again below.
  txn.batch.jobs = std::move(claims_dropped);
  for (size_t i = 0; i < plan.result.placed.size(); ++i)
    add_placement_locked(txn, plan.result.placed[i], plan.masters[i], now);
  commit_preemption_locked(txn, plan, entries, now);
  if (!commit_locked(txn, "scheduling pass")) {
    for (const auto& p : plan.result.placed) alloc_.release(p.job_id);
  }
}

void ClusterState::add_placement_locked(Txn& txn, const Placement& p, const MasterEndpoint& master, int64_t now) {
  const int64_t seq = job_key(p.job_id);
  JobEntry& e = jobs_.at(seq);
  api::Job nj = e.job;
  nj.state = api::JobState::assigned;
  nj.allocations = p.allocations;
  nj.reason.clear();
  nj.preempt_claim.clear();  // Placed: a preemption for it is over.
  nj.preempt_victims.clear();
  nj.master_addr = master.addr;
  nj.master_port = master.port;
  if (!nj.allocations.empty() && master.port == 0)
    spdlog::warn("job {}: no free master port on {} in {}-{}", nj.id, nj.allocations.front().node, opts_.master_port_lo,
                 opts_.master_port_hi);
  txn.batch.jobs.push_back(nj);
  const double waited = static_cast<double>(now - e.queued_at_ms) / 1000.0;
  txn.apply.push_back([this, nj, seq, waited]() REQUIRES(mu_) {
    JobEntry& entry = jobs_.at(seq);
    entry.job = nj;
    entry.reports.clear();
    jobs_.dequeue(seq);
    preempting_.erase(seq);
    active_.insert(seq, nj.allocations);
    ++counters_.placements_total;
    counters_.queue_wait.observe(waited < 0 ? 0 : waited);
    for (const auto& a : nj.allocations) bump_locked(a.node);
    log_change(nj, "placed");
  });
}

bool ClusterState::take_pending_reasons_locked(const ScheduleResult& res, const std::vector<PendingJob>& queue,
                                               const std::vector<JobEntry*>& entries) {
  bool reasons_changed = false;
  for (const PendingReasons::Entry& w : res.pending_reasons.entries()) {
    JobEntry* e = entries[w.queue_index];  // Placements are not in the list.
    if (e->job.state != api::JobState::pending) continue;
    if (preempting_.contains(queue[w.queue_index].seq)) continue;  // Those keep "preempting ...".
    const std::string& now_why = res.pending_reasons.text(w);
    if (!was_preempted(e->job.reason)) {  // Most jobs: the pass's reason as it is, copied only when it changed.
      if (e->job.reason != now_why) {
        e->job.reason = now_why;
        reasons_changed = true;
      }
      continue;
    }
    std::string shown = pending_reason(e->job.reason, now_why);
    if (e->job.reason != shown) {
      e->job.reason = std::move(shown);
      reasons_changed = true;
    }
  }
  return reasons_changed;
}

void ClusterState::run_scheduler() {
  MutexLock lk(mu_);
  for (;;) {
    if (pacing_.skipped()) {
      // New jobs still lack their reasons: a full pass is due within full_pass_every(),
      // or sooner when capacity changes.
      dirty_cv_.wait_for(mu_, pacing_.full_pass_every(), [&]() REQUIRES(mu_) { return stopping_ || pacing_.due(); });
    } else {
      dirty_cv_.wait(mu_, [&]() REQUIRES(mu_) { return stopping_ || pacing_.due(); });
    }
    if (stopping_) return;
    pacing_.take_dirty();
    lk.unlock();
    const int64_t t0 = clock_.steady_ns();
    schedule_pass();
    const auto took = std::chrono::nanoseconds(clock_.steady_ns() - t0);
    lk.lock();
    // A pass over a long queue is not free: under a stream of submissions, let
    // changes gather for as long as the last pass took (capped) before the next,
    // so passes use at most about half a core. An idle scheduler still reacts at once.
    if (took > std::chrono::milliseconds(1))
      dirty_cv_.wait_for(mu_, std::min<std::chrono::nanoseconds>(took, std::chrono::milliseconds(50)),
                         [&]() REQUIRES(mu_) { return stopping_; });
  }
}

void ClusterState::check_liveness() {
  MutexLock lk(mu_);
  const int64_t now = clock_.now_ms();
  if (preempting_.take_retry_due(now)) mark_dirty_locked();  // A job passed the minimum runtime.
  std::vector<std::string> gone;
  for (const auto& [name, n] : nodes_)
    if (!n.down && now - n.rec.last_heartbeat_ms >= opts_.heartbeat_timeout_ms) gone.push_back(name);
  Txn txn;
  std::set<int64_t> stopped = stop_warned_victims_locked(txn, now);
  // Backstop for time limits (agents enforce them first): a running job past its
  // limit plus kill grace plus one heartbeat timeout is failed and its ranks fenced.
  for (int64_t seq : active_) {
    const JobEntry& e = jobs_.at(seq);
    const auto& spec = e.job.spec;
    if (!spec.time_limit_s || !e.job.started_at_ms) continue;
    const int64_t grace_s = spec.kill_grace_s.value_or(api::kDefaultKillGraceS);
    const int64_t deadline = e.job.started_at_ms + (*spec.time_limit_s + grace_s) * 1000 + opts_.heartbeat_timeout_ms;
    if (now < deadline || !stopped.insert(seq).second) continue;
    stop_job_locked(txn, e, api::JobState::failed, "time limit of " + std::to_string(*spec.time_limit_s) + "s reached",
                    std::nullopt, false);
  }
  if (gone.empty() && stopped.empty() && txn.apply.empty()) return;
  for (const auto& name : gone) {
    for (int64_t seq : active_.on(name)) {
      const JobEntry& e = jobs_.at(seq);
      bool here = false;
      for (const auto& a : e.job.allocations) here |= a.node == name;
      if (!here || !stopped.insert(seq).second) continue;
      stop_job_locked(txn, e, api::JobState::failed, "node " + name + " down", std::nullopt, true);
    }
    txn.apply.push_back([this, name, now]() REQUIRES(mu_) {
      NodeEntry& n = nodes_.at(name);
      n.down = true;
      ++nodes_changes_;
      alloc_.set_schedulable(name, false);
      spdlog::warn("node {} down: no heartbeat for {} ms", name, now - n.rec.last_heartbeat_ms);
    });
  }
  commit_locked(txn, "liveness");
}

void ClusterState::shutdown() {
  MutexLock lk(mu_);
  stopping_ = true;
  for (const auto& node : polls_.nodes()) answer_watches_locked(node);
  dirty_cv_.notify_all();
}

void ClusterState::mark_dirty_locked(bool capacity) {
  pacing_.mark_dirty(capacity);
  dirty_cv_.notify_one();
}

void ClusterState::bump_locked(const std::string& node) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  it->second.version = versions_of_nodes_.bump(node);  // Answered once the whole change is applied.
}

}  // namespace tessel::scheduler
