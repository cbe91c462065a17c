#pragma once
// The preemption policy over the allocator's state (see
// tessel/scheduler/preemption.hpp for the rules). Internal to tessel_placement.

#include "cluster_state.hpp"
#include "tessel/scheduler/preemption.hpp"

namespace tessel::scheduler::detail {

PreemptionOutcome plan_preemption(const ClusterState& state, const PreemptionRequest& req);

}  // namespace tessel::scheduler::detail
