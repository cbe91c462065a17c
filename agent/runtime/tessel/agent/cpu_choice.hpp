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

}  // namespace tessel::agent
