#pragma once
// Which CPUs a task gets on its node (issue 28): pure, so tests drive it with any
// layout.

#include <set>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// `count` CPUs of `allowed` (the agent's CPUs) that no running task holds (`taken`),
// nearest the task's cards first: the CPUs of the NUMA node holding most of its cards
// (`card_numa_nodes`, one entry per card, -1 when not known), then of the node holding
// the next most, then those of the other nodes by id, then CPUs on no known node.
// Within a node, ascending. Ascending on return. An error when fewer are free:
// "4 CPUs asked, 2 of the node's 8 are free".
Result<std::vector<int>> choose_cpus(int count, const std::vector<int>& allowed, const std::set<int>& taken,
                                     const std::vector<api::NumaNode>& numa, const std::vector<int>& card_numa_nodes);

// A task with one rank per card: each rank's share of the task's CPUs (`task_cpus`),
// nearest its card first (`rank_numa_nodes`: each rank's card's NUMA node, -1 when not
// known). Shares differ by at most one CPU (the first ranks get the extra ones) and do
// not overlap. Empty (no pinning: every rank may use all of the task's CPUs) when there
// are fewer CPUs than ranks, or a single rank.
std::vector<std::vector<int>> split_cpus(const std::vector<int>& task_cpus, const std::vector<int>& rank_numa_nodes,
                                         const std::vector<api::NumaNode>& numa);

}  // namespace tessel::agent
