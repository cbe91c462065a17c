#pragma once
// Preemption policy: which running jobs to stop so that a pending job within its
// project's guarantee can start. Pure: plain data in (the allocator's holds, the
// running jobs, the projects' limits, now_ms), plain data out; no clock, no I/O.
//
// Rules (ModuleGroupAllocator::plan_preemption):
//  - only for a job within its project's guarantee: its project's held cards of the
//    job's model (or "*" when it names none) plus the job's cards <= guaranteed;
//  - victims are running jobs that are preemptible, of another project, started at
//    least min_runtime_ms ago, whose project stays at or above its own guarantee
//    once they are gone (it was borrowing them); a job of a project without quotas
//    has no guarantee, so all it holds is borrowed;
//  - whole gangs: a victim gives up every card it holds, on every node;
//  - the fewest victims whose cards, with the free ones, make valid groups for the
//    job; among sets of the same size the one whose victims started latest (newest
//    first); exact for single-node jobs and for gangs with up to 12 candidates on the
//    job's nodes, a minimal (not always minimum) set past that;
//  - no plan when the job fits without stopping anything.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

struct PendingJob;
struct ProjectLimits;

// A job holding cards, as the policy sees it. Its cards are the allocator's holds
// under `job_id`.
struct RunningJob {
  std::string job_id;
  int32_t project = -1;  // Index into the request's limits; -1: a project without quotas.
  bool preemptible = false;
  int64_t started_at_ms = 0;  // 0: not running yet (assigned): never a victim.
};

struct PreemptionRequest {
  // The job to make room for. Its `project` indexes `limits`; -1 never preempts.
  const PendingJob* job = nullptr;
  std::vector<RunningJob> running;
  // Per project: cards held (by model and "*") and guaranteed; as in schedule().
  const std::vector<ProjectLimits>* limits = nullptr;
  int64_t now_ms = 0;
  int64_t min_runtime_ms = 0;
};

struct PreemptionPlan {
  std::vector<std::string> victims;          // Newest-started first.
  std::vector<api::Allocation> allocations;  // What the job takes once they are gone; ranks 0..nodes-1.
};

struct PreemptionOutcome {
  std::optional<PreemptionPlan> plan;
  // Without a plan: the earliest time a job now too young to preempt passes the
  // minimum runtime (asking again then may find a plan); nullopt when none would.
  std::optional<int64_t> retry_at_ms;
};

}  // namespace tessel::scheduler
