#include "tessel/agent/cpu_choice.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace tessel::agent {

Result<std::vector<int>> choose_cpus(int count, const std::vector<int>& allowed, const std::set<int>& taken,
                                     const std::vector<api::NumaNode>& numa, const std::vector<int>& card_numa_nodes) {
  std::vector<int> free;
  for (int c : allowed)
    if (!taken.count(c)) free.push_back(c);
  std::sort(free.begin(), free.end());
  if (count < 0 || static_cast<size_t>(count) > free.size())
    return Error::unavailable(std::to_string(count) + " CPUs asked, " + std::to_string(free.size()) +
                              " of the node's " + std::to_string(allowed.size()) + " are free");
  // Rank of each NUMA node: those holding more of the task's cards first, then by id.
  std::map<int, int> cards_on;
  for (int n : card_numa_nodes)
    if (n >= 0) ++cards_on[n];
  std::vector<const api::NumaNode*> order;
  order.reserve(numa.size());
  for (const auto& n : numa) order.push_back(&n);
  std::stable_sort(order.begin(), order.end(), [&](const api::NumaNode* a, const api::NumaNode* b) {
    const int ca = cards_on.count(a->id) ? cards_on[a->id] : 0, cb = cards_on.count(b->id) ? cards_on[b->id] : 0;
    return ca != cb ? ca > cb : a->id < b->id;
  });
  std::map<int, size_t> rank_of_cpu;  // CPU -> its node's rank; CPUs on no node rank last.
  for (size_t i = 0; i < order.size(); ++i)
    for (int c : order[i]->cpus) rank_of_cpu.emplace(c, i);
  auto rank = [&](int c) {
    auto it = rank_of_cpu.find(c);
    return it == rank_of_cpu.end() ? order.size() : it->second;
  };
  std::stable_sort(free.begin(), free.end(), [&](int a, int b) { return rank(a) < rank(b); });
  free.resize(static_cast<size_t>(count));
  std::sort(free.begin(), free.end());
  return free;
}

std::vector<std::vector<int>> split_cpus(const std::vector<int>& task_cpus, const std::vector<int>& rank_numa_nodes,
                                         const std::vector<api::NumaNode>& numa) {
  const size_t ranks = rank_numa_nodes.size();
  if (ranks < 2 || task_cpus.size() < ranks) return {};
  std::map<int, int> node_of;  // CPU -> NUMA node.
  for (const auto& n : numa)
    for (int c : n.cpus) node_of.emplace(c, n.id);
  std::set<int> left(task_cpus.begin(), task_cpus.end());
  std::vector<std::vector<int>> shares(ranks);
  auto want = [&](size_t r) { return task_cpus.size() / ranks + (r < task_cpus.size() % ranks ? 1 : 0); };
  // First every rank from its card's node, then what is left to those still short.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t r = 0; r < ranks; ++r)
      for (auto it = left.begin(); it != left.end() && shares[r].size() < want(r);) {
        auto node = node_of.find(*it);
        if (pass == 0 && (node == node_of.end() || node->second != rank_numa_nodes[r])) {
          ++it;
          continue;
        }
        shares[r].push_back(*it);
        it = left.erase(it);
      }
  for (auto& share : shares) std::sort(share.begin(), share.end());
  return shares;
}

}  // namespace tessel::agent
