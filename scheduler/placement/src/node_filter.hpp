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

// Reservations (issue 32), as of the pass's now (ClusterState::refresh_reservations):
// a job of a reservation only on its nodes in its open window; during a window no other
// job (none at all in a maintenance one); before a window only a job whose time limit
// ends before its start (none without a time limit).
bool reservation_admits(const NodeReservations& r, const PendingJob& job);
inline bool reservation_ok(const Node& node, const PendingJob& job) {
  if (node.reserved == nullptr) return job.constraints == nullptr || job.constraints->reservation.empty();
  return reservation_admits(*node.reserved, job);
}
// For backfill's planned start of a job the node admits now: `start` if the job may
// still start there then (a job of another reservation, or none, ends before the next
// window opens; a job of the open window starts before it ends), else the next window's
// end (INT64_MAX for a job of a window that ends first).
int64_t reservation_bound(const Node& node, const PendingJob& job, int64_t start);
// Why reservation_ok() is false: "reserved for demo until 2026-12-05T10:00:00.000Z",
// "not in reservation demo", "in maintenance until ..."; "" when it is true.
std::string reservation_note(const Node& node, const PendingJob& job);

// eligible() but for reservations: for pending reasons ("reserved for demo until ...").
inline bool eligible_but_reservations(const Node& node, const PendingJob& job) {
  return (job.nodes == 1 || node.gang_block.empty()) &&
         api::driver_version_matches(job.driver_version, node.driver_version) &&
         (job.constraints == nullptr || admits(node, *job.constraints, job.nodes));
}
inline bool eligible(const Node& node, const PendingJob& job) {
  return eligible_but_reservations(node, job) && reservation_ok(node, job);
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
    return std::tie(c->node_selector, c->nodelist, c->exclude, c->reservation, c->topology) <
           std::tie(o.c->node_selector, o.c->nodelist, o.c->exclude, o.c->reservation, o.c->topology);
  }
  bool operator==(const ConstraintsKey& o) const {
    if (c == o.c) return true;
    if (c == nullptr || o.c == nullptr) return false;
    return *c == *o.c;
  }
};

}  // namespace tessel::scheduler::detail
