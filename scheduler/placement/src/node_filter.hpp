#pragma once
// Which nodes a pending job may use: its driver version, a gang's gang_block, and its
// node constraints (issue 32): every pair of its node_selector among the node's
// labels, the node not in its exclude list and, when its nodelist names as many nodes
// as it asks, in the nodelist. A shorter nodelist (a gang's "these and others") admits
// every node; the planners take its nodes first. Pure; internal to tessel_placement.

#include <string>
#include <vector>

#include "cluster_state.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/topology.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {

bool admits(const Node& node, const api::NodeConstraints& c, int nodes);

inline bool eligible(const Node& node, const PendingJob& job) {
  return (job.nodes == 1 || node.gang_block.empty()) &&
         api::driver_version_matches(job.driver_version, node.driver_version) &&
         (job.constraints == nullptr || admits(node, *job.constraints, job.nodes));
}

// Why the node fails the constraints, for pending reasons ("not rack=r7", "in exclude",
// "not in nodelist"); "" when it passes them.
std::string constraint_note(const Node& node, const api::NodeConstraints& c, int nodes);

// Why `eligible(node, job)` is false, for pending reasons: the gang block, the driver,
// or the constraint note.
std::string exclusion_note(const Node& node, const PendingJob& job);

// A nodelist shorter than the job's node count: nodes that must be among the job's,
// with others the planner picks.
inline bool lists_some(const PendingJob& job) {
  return job.constraints != nullptr && !job.constraints->nodelist.empty() &&
         static_cast<int>(job.constraints->nodelist.size()) < job.nodes;
}

// The constraints as a person reads them: "rack=r7, fabric=ib; nodelist n1,n2; exclude n9".
std::string describe(const api::NodeConstraints& c);
// Only the selector and exclude list, after "node": "with rack=r7 outside exclude (n9)",
// or "" for neither.
std::string describe_filter(const api::NodeConstraints& c);

// Orders constraints by their content (none first), so that a pass finds jobs with the
// same constraints (SchedulePass::same_constraints()) and lets them share cached failures.
struct ConstraintsKey {
  const api::NodeConstraints* c = nullptr;
  bool operator<(const ConstraintsKey& o) const {
    if (c == o.c) return false;
    if (c == nullptr || o.c == nullptr) return c == nullptr;
    return std::tie(c->node_selector, c->nodelist, c->exclude) <
           std::tie(o.c->node_selector, o.c->nodelist, o.c->exclude);
  }
  bool operator==(const ConstraintsKey& o) const {
    if (c == o.c) return true;
    if (c == nullptr || o.c == nullptr) return false;
    return *c == *o.c;
  }
};

}  // namespace tessel::scheduler::detail
