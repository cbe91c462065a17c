// ClusterState: preemption. The pass asks the pure policy
// (ModuleGroupAllocator::plan_preemption) for victims when a job within its
// project's guarantee is left pending, stops them the way cancel does (their
// assignments leave the desired state, so the agent sends SIGTERM, then SIGKILL
// after their kill_grace_s; their cards stay fenced until it reports the tasks
// gone), requeues them without using a retry, and holds their cards for the job
// as they free up; once every card is free the job is placed on them. The claim
// on those cards is stored in the job's record, so it survives a restart.
#include <algorithm>
#include <tuple>

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

// Jobs within their guarantee asked for a plan per pass, at most: a plan costs a
// walk over the nodes of the job's model, and the next pass comes soon.
constexpr int kPlansPerPass = 8;

std::string hold_id(const std::string& job_id) { return "preempt:" + job_id; }

std::string join(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::string preempting_reason(const std::vector<std::string>& victims) {
  return "preempting " + join(victims) + ": waiting for their tasks to end";
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
    for (const auto& a : p.allocations) {
      auto n = nodes_.find(a.node);
      keep = keep && n != nodes_.end() && schedulable(n->second);
    }
    if (!keep) {
      alloc_.release(hold_id(job_id));
      if (entry != jobs_.end()) {  // In memory now, and in its record with the pass's write.
        entry->second.job.preempt_claim.clear();
        entry->second.job.preempt_victims.clear();
        dropped.push_back(entry->second.job);
      }
      spdlog::info("job {}: preemption of {} dropped (job no longer pending or a node unavailable)", job_id,
                   join(p.victims));
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
    preempting_.put(key, {job.preempt_claim, job.preempt_victims});
    job.reason = preempting_reason(job.preempt_victims);
    spdlog::info("job {}: resumes its preemption of {}", job.id, join(job.preempt_victims));
  }
}

void ClusterState::plan_preemption_locked(Txn& txn, const std::vector<PendingJob>& queue,
                                          const std::vector<JobEntry*>& entries, const ScheduleResult& res,
                                          const PassPolicy& policy, int64_t now) {
  preempting_.clear_retry();
  if (policy.limits.empty()) return;  // No project has a quota: nobody has a guarantee.
  std::set<std::string> placed;
  for (const auto& p : res.placed) placed.insert(p.job_id);
  std::vector<RunningJob> running;
  // Shapes (project, vendor, model, devices, nodes, the job's node constraints if any)
  // that found no plan: the same again finds none.
  std::set<std::tuple<int32_t, int, std::string, int, int, const api::NodeConstraints*>> failed;
  int plans = 0;
  for (uint32_t i : res.order) {
    const PendingJob& job = queue[i];
    if (!job.within_guarantee || placed.count(job.id)) continue;
    auto shape = std::make_tuple(job.project, job.vendor ? static_cast<int>(*job.vendor) : -1, job.model, job.devices,
                                 job.nodes, job.constraints);
    if (failed.count(shape)) continue;
    if (++plans > kPlansPerPass) break;
    if (running.empty()) {
      running.reserve(active_.size());
      for (int64_t seq : active_) {
        const api::Job& j = jobs_.at(seq).job;
        auto idx = policy.index.find(j.spec.project);
        running.push_back(RunningJob{j.id, idx == policy.index.end() ? -1 : idx->second, j.spec.preemptible,
                                     j.state == api::JobState::running ? j.started_at_ms : 0});
      }
    }
    PreemptionOutcome out =
        alloc_.plan_preemption(PreemptionRequest{&job, running, &policy.limits, now, opts_.preempt_min_runtime_ms});
    if (!out.plan) {
      failed.insert(shape);
      if (out.retry_at_ms) preempting_.retry_at(*out.retry_at_ms);
      continue;
    }
    const JobEntry& e = *entries[i];
    for (const auto& victim : out.plan->victims) {
      auto v = jobs_.find(job_key(victim));
      if (v == jobs_.end()) continue;
      stop_job_locked(txn, v->second, api::JobState::pending, "", std::nullopt, true, e.job.id);
    }
    const int64_t seq = job_key(e.job.id);
    // The claim goes into the job's record with the victims' stops: a restarted
    // scheduler resumes the preemption (restore_preemptions_locked()).
    api::Job claimant = e.job;
    claimant.preempt_claim = out.plan->allocations;
    claimant.preempt_victims = out.plan->victims;
    txn.batch.jobs.push_back(claimant);
    const std::string reason = preempting_reason(out.plan->victims);
    txn.apply.push_back([this, seq, plan = *out.plan, reason]() REQUIRES(mu_) {
      preempting_.put(seq, {plan.allocations, plan.victims});
      counters_.preemptions_total += plan.victims.size();
      JobEntry& entry = jobs_.at(seq);
      entry.job.preempt_claim = plan.allocations;
      entry.job.preempt_victims = plan.victims;
      entry.job.reason = reason;  // Shown, not stored: after a restart the pass gives it a reason again.
      spdlog::info("job {} preempts {} (project {} within its guarantee)", entry.job.id, join(plan.victims),
                   entry.job.spec.project);
    });
    return;  // One per pass: stopping the victims wakes the next.
  }
}

}  // namespace tessel::scheduler
