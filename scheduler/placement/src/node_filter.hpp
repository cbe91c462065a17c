#pragma once
// Which nodes a pending job may use: its driver version, a gang's gang_block, and its
// node constraints (issue 32): every pair of its node_selector among the node's
// labels, the node not in its exclude list and, when its nodelist names as many nodes
// as it asks, in the nodelist. A shorter nodelist (a gang's "these and others") admits
// every node; the planners take its nodes first. Pure; internal to tessel_placement.

#include <string>
#include <string_view>
#include <vector>

#include "cluster_state.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/topology.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {

// Whether the node passes the constraints for a job of `nodes` nodes: the selector, the
// exclude list, a full nodelist and, for a gang with a required topology, the label
// of that key (a node without it is in no block).
bool admits(const Node& node, const api::NodeConstraints& c, int nodes);

// The node's value of label `key`, or null.
const std::string* label_of(const Node& node, std::string_view key);

// The topology a job's placement follows (issue 32), given the scheduler's levels:
// for gangs, the one required key, or the preferred keys to try in turn (a job's
// preferred key then the wider levels after it; with none named, every level), and
// whether other nodes may be used when no block fits. Single-node jobs: none.
struct TopologyPlan {
  std::vector<std::string_view> keys;
  bool required = false;
  bool empty() const { return keys.empty(); }
};
TopologyPlan topology_plan(const PendingJob& job, const std::vector<std::string>& levels);

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
    return std::tie(c->node_selector, c->nodelist, c->exclude, c->topology) <
           std::tie(o.c->node_selector, o.c->nodelist, o.c->exclude, o.c->topology);
  }
  bool operator==(const ConstraintsKey& o) const {
    if (c == o.c) return true;
    if (c == nullptr || o.c == nullptr) return false;
    return *c == *o.c;
  }
};

}  // namespace tessel::scheduler::detail
