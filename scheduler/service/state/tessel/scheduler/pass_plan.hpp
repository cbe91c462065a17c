#pragma once
// PassPlan: what one scheduling pass decides, as a value, before anything is written:
// the placements with their MASTER_ADDR and MASTER_PORT, where the scheduling order
// leaves each pending job in the queue, the estimated starts, why the others wait, and
// the preemption (victims and the cards they free) for a job within its guarantee.
// plan_pass() computes it from the queue and the allocator, with no lock, store,
// thread or clock of its own, so tests drive it alone (tests/scheduler/pass_plan_test.cpp).
// ClusterState::schedule_pass() (state_sched.cpp) builds the input from its tables
// and commits the plan: written first, applied once written.
//
// The allocator's holds on the placed cards are part of the plan: they keep the
// placements of one pass apart. The caller releases them when the plan's write fails.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessel/scheduler/allocator.hpp"
#include "tessel/scheduler/preemption.hpp"

namespace tessel::scheduler {

struct PassInput {
  const std::vector<PendingJob>* queue = nullptr;
  int64_t now_ms = 0;
  std::vector<ProjectLimits>* limits = nullptr;  // Null: no project has a quota.
  // Placements decided before the pass (preemptions whose cards are all free now),
  // their cards already held.
  std::vector<Placement> ready;
  int master_port_lo = 0, master_port_hi = -1;  // --master-port-range; empty: no ports.
  // The address jobs reach `node` at (MASTER_ADDR of a job with rank 0 there).
  std::function<std::string(const std::string& node)> address_of;
  // The master ports of the running jobs whose rank 0 is on `node`.
  std::function<std::set<int>(const std::string& node)> ports_in_use;
  // Preemption, with `limits`: the jobs holding cards (asked for once, when a job
  // within its guarantee is left pending; unset: no preemption) and
  // --preempt-min-runtime.
  std::function<std::vector<RunningJob>()> running;
  int64_t preempt_min_runtime_ms = 0;
};

struct MasterEndpoint {
  std::string addr;
  int port = 0;  // 0: every port of the range is taken on that node.
};

struct PassPlan {
  // The allocator's answer, with the ready placements appended to `placed`.
  ScheduleResult result;
  std::vector<MasterEndpoint> masters;  // Parallel to result.placed.
  // Parallel to the queue: the job's place among the jobs left pending, in scheduling
  // order (1 runs first); 0 for a placed job.
  std::vector<int> queue_positions;
  struct Start {
    std::string job_id;
    int64_t at_ms = 0;
  };
  std::vector<Start> estimated_starts;  // Jobs whose cards the pass reserved.
  // The first job within its guarantee left pending that the policy
  // (ModuleGroupAllocator::plan_preemption) finds victims for; one per pass, as
  // stopping them wakes the next.
  struct Preemption {
    uint32_t queue_index = 0;
    PreemptionPlan plan;
  };
  std::optional<Preemption> preemption;
  // When a job now too young to be preempted passes the minimum runtime: a pass then
  // may find a plan.
  std::optional<int64_t> preempt_retry_at_ms;
};

PassPlan plan_pass(ModuleGroupAllocator& alloc, PassInput in);

}  // namespace tessel::scheduler
