#include "tessel/agent/cpu_choice.hpp"

#include <algorithm>
#include <map>

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

}  // namespace tessel::agent
