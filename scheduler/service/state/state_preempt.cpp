// ClusterState: preemption. The pass's plan (plan_pass(), pass_plan.cpp) holds the
// victims the pure policy (ModuleGroupAllocator::plan_preemption) picks when a job
// within its project's guarantee is left pending; the commit stops them the way cancel does (their
// assignments leave the desired state, so the agent sends SIGTERM, then SIGKILL
// after their kill_grace_s; their cards stay fenced until it reports the tasks
// gone), requeues them without using a retry, and holds their cards for the job
// as they free up; once every card is free the job is placed on them. The claim
// on those cards is stored in the job's record, so it survives a restart.
// A running victim with a warning signal (JobSpec `signal`, as Slurm's --signal) gets
// it first, and its stop begins min(before_s, --preempt-warning-max) later
// (check_liveness() calls stop_warned_victims_locked()).
#include <algorithm>
#include <set>
#include <tuple>

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

std::string hold_id(const std::string& job_id) { return "preempt:" + job_id; }

std::string join(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::string preempting_reason(const std::vector<std::string>& victims) {
  return "preempting " + join(victims) + ": waiting for their tasks to end";
}

// How long before its stop a victim is warned, in ms: 0 when it has no warning
// signal or is not running yet (nothing of it to warn).
int64_t warning_lead_ms(const api::Job& victim, int64_t max_ms) {
  if (!victim.spec.signal || victim.state != api::JobState::running) return 0;
  return std::min(victim.spec.signal->before_s * 1000, max_ms);
}

// Whether `job` still runs on cards of `claim` (node and module in common).
bool on_claimed_cards(const api::Job& job, const std::vector<api::Allocation>& claim) {
  for (const auto& a : job.allocations)
    for (const auto& c : claim)
      if (a.node == c.node)
        for (int m : a.module_ids)
          if (std::find(c.module_ids.begin(), c.module_ids.end(), m) != c.module_ids.end()) return true;
  return false;
}

// Whether the nodes of a claim, labelled as they are now, still admit the job of `c`
// for `nodes` nodes: an admin may have relabelled one since the claim was made.
bool claim_admits(const api::NodeConstraints& c, int nodes,
                  const std::vector<std::pair<std::string, api::Labels>>& claimed) {
  std::set<std::string> blocks;  // The required topology label's values among them.
  for (const auto& [name, labels] : claimed) {
    for (const auto& [key, value] : c.node_selector)
      if (auto it = labels.find(key); it == labels.end() || it->second != value) return false;
    if (std::find(c.exclude.begin(), c.exclude.end(), name) != c.exclude.end()) return false;
    if (!c.nodelist.empty() && static_cast<int>(c.nodelist.size()) >= nodes &&
        std::find(c.nodelist.begin(), c.nodelist.end(), name) == c.nodelist.end())
      return false;
    if (nodes > 1 && !c.topology.required.empty()) {
      auto it = labels.find(c.topology.required);
      if (it == labels.end()) return false;
      blocks.insert(it->second);
    }
  }
  return blocks.size() <= 1;
}

}  // namespace

bool ClusterState::may_preempt_locked(const std::string& project) const { return projects_.may_preempt(project); }

std::vector<Placement> ClusterState::advance_preemptions_locked(PassPolicy& policy, int64_t now,
                                                                std::vector<api::Job>& dropped) {
  std::vector<Placement> ready;
  for (auto it = preempting_.begin(); it != preempting_.end();) {
    const PreemptionClaims::Claim& p = it->second;
    auto pending = jobs_.pending().find(it->first);
    auto entry = jobs_.find(it->first);  // Keyed by job_key(): an array element's id is not make_job_id(key).
    const std::string job_id = entry != jobs_.end() ? entry->second.job.id : make_job_id(it->first >> kArrayKeyBits);
    bool keep = pending != jobs_.pending().end();
    std::vector<std::pair<std::string, api::Labels>> claimed;
    for (const auto& a : p.allocations) {
      auto n = nodes_.find(a.node);
      keep = keep && n != nodes_.end() && schedulable(n->second);
      if (keep) claimed.emplace_back(a.node, effective_labels(n->second.rec));
    }
    if (keep) {
      const api::JobSpec& spec = pending->second->job.spec;
      keep = claim_admits(spec.constraints, spec.nodes, claimed);
    }
    if (!keep) {
      alloc_.release(hold_id(job_id));
      if (entry != jobs_.end()) {  // In memory now, and in its record with the pass's write.
        entry->second.job.preempt_claim.clear();
        entry->second.job.preempt_victims.clear();
        dropped.push_back(entry->second.job);
      }
      spdlog::info(
          "job {}: preemption of {} dropped (job no longer pending, or a node unavailable or no longer "
          "matching it)",
          job_id, join(p.victims));
      it = preempting_.erase(it);
      continue;
    }
    // Hold each of its cards as it frees up, so no other job takes it.
    bool all_free = true;
    for (const auto& a : p.allocations) {
      api::Allocation free_now = a;
      free_now.module_ids.clear();
      free_now.indices.clear();
      for (size_t i = 0; i < a.module_ids.size(); ++i) {
        auto holder = alloc_.holder(a.node, a.module_ids[i]);
        if (!holder) {
          free_now.module_ids.push_back(a.module_ids[i]);
          if (i < a.indices.size()) free_now.indices.push_back(a.indices[i]);
        } else if (*holder != hold_id(job_id)) {
          all_free = false;
        }
      }
      if (!free_now.module_ids.empty()) alloc_.hold(hold_id(job_id), {free_now}, std::nullopt);
    }
    const api::Job& job = pending->second->job;
    if (auto idx = policy.index.find(job.spec.project); idx != policy.index.end()) {
      for (const auto& [model, n] : cards_by_model_locked(p.allocations))
        policy.limits[static_cast<size_t>(idx->second)].held[model] += n;
    }
    if (all_free) {
      alloc_.release(hold_id(job_id));
      std::optional<int64_t> end;
      if (job.spec.time_limit_s) end = now + *job.spec.time_limit_s * 1000;
      if (auto s = alloc_.try_hold(job.id, p.allocations, end); s) {
        ready.push_back(Placement{job.id, p.allocations});
      } else {
        spdlog::error("job {}: its preempted cards cannot be held: {}", job.id, s.error().message);
      }
    }
    ++it;
  }
  return ready;
}

void ClusterState::restore_preemptions_locked() {
  for (const auto& [key, entry] : jobs_.pending()) {
    api::Job& job = entry->job;
    if (job.preempt_claim.empty()) continue;
    PreemptionClaims::Claim claim{job.preempt_claim, job.preempt_victims, {}};
    // A victim still on the claimed cards was warned and not yet stopped when the last
    // scheduler went: its stop is due now.
    for (const auto& v : job.preempt_victims)
      if (auto it = jobs_.find(job_key(v));
          it != jobs_.end() && active_.contains(it->first) && on_claimed_cards(it->second.job, job.preempt_claim))
        claim.stops.push_back({v, 0});
    preempting_.put(key, std::move(claim));
    job.reason = preempting_reason(job.preempt_victims);
    spdlog::info("job {}: resumes its preemption of {}", job.id, join(job.preempt_victims));
  }
}

void ClusterState::commit_preemption_locked(Txn& txn, const PassPlan& pass, const std::vector<JobEntry*>& entries,
                                            int64_t now) {
  preempting_.clear_retry();
  if (pass.preempt_retry_at_ms) preempting_.retry_at(*pass.preempt_retry_at_ms);
  if (!pass.preemption) return;
  const PreemptionPlan& plan = pass.preemption->plan;
  const JobEntry& e = *entries[pass.preemption->queue_index];
  std::vector<PreemptionClaims::DeferredStop> stops;
  for (const auto& victim : plan.victims) {
    auto v = jobs_.find(job_key(victim));
    if (v == jobs_.end()) continue;
    if (const int64_t lead = warning_lead_ms(v->second.job, opts_.preempt_warning_max_ms); lead > 0) {
      const std::string& sig = v->second.job.spec.signal->name;
      signal_locked(txn, v->first, sig, "",
                    "SIG" + sig + " to every rank: preempted by " + e.job.id + ", stopped in " +
                        std::to_string((lead + 999) / 1000) + "s");
      stops.push_back({victim, now + lead});
      continue;
    }
    stop_job_locked(txn, v->second, api::JobState::pending, "", std::nullopt, true, e.job.id);
  }
  const int64_t seq = job_key(e.job.id);
  // The claim goes into the job's record with the victims' stops: a restarted
  // scheduler resumes the preemption (restore_preemptions_locked()).
  api::Job claimant = e.job;
  claimant.preempt_claim = plan.allocations;
  claimant.preempt_victims = plan.victims;
  txn.batch.jobs.push_back(claimant);
  const std::string reason = preempting_reason(plan.victims);
  txn.apply.push_back([this, seq, plan, reason, stops]() REQUIRES(mu_) {
    preempting_.put(seq, {plan.allocations, plan.victims, stops});
    counters_.preemptions_total += plan.victims.size();
    JobEntry& entry = jobs_.at(seq);
    entry.job.preempt_claim = plan.allocations;
    entry.job.preempt_victims = plan.victims;
    entry.job.reason = reason;  // Shown, not stored: after a restart the pass gives it a reason again.
    spdlog::info("job {} preempts {} (project {} within its guarantee)", entry.job.id, join(plan.victims),
                 entry.job.spec.project);
  });
}

std::set<int64_t> ClusterState::stop_warned_victims_locked(Txn& txn, int64_t now) {
  std::set<int64_t> stopped;
  for (const auto& due : preempting_.due_stops(now)) {
    const int64_t seq = due.first;
    const std::string& victim = due.second;
    auto claimant = jobs_.find(seq);
    auto v = jobs_.find(job_key(victim));
    txn.apply.push_back([this, seq, victim]() REQUIRES(mu_) { preempting_.drop_stop(seq, victim); });
    // The preempting job gone (its claim is dropped at the next pass), or the victim
    // ended or stopped meanwhile: nothing to stop.
    if (claimant == jobs_.end() || claimant->second.job.state != api::JobState::pending || v == jobs_.end() ||
        !active_.contains(v->first) || !stopped.insert(v->first).second)
      continue;
    spdlog::info("job {}: its warning lead is over, stopping it for {}", victim, claimant->second.job.id);
    stop_job_locked(txn, v->second, api::JobState::pending, "", std::nullopt, true, claimant->second.job.id);
  }
  return stopped;
}

}  // namespace tessel::scheduler
