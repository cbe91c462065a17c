#pragma once
// The assigned and running jobs, by sequence number and by node. An agent's report,
// its long poll's answer, a node going down and a new job's master port each concern
// the jobs on one node; looking them up here costs the jobs on that node, not every
// running job in the cluster (160,000 of them on 20,000 nodes of 8 cards). Pure.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

class ActiveJobs {
 public:
  using const_iterator = std::set<int64_t>::const_iterator;

  // Adds `seq` on the nodes of `allocations`; a second insert of `seq` first takes it
  // off the nodes of the first.
  void insert(int64_t seq, const std::vector<api::Allocation>& allocations) {
    erase(seq);
    all_.insert(seq);
    std::vector<std::string>& nodes = nodes_of_[seq];
    for (const auto& a : allocations) {
      if (by_node_[a.node].insert(seq).second) nodes.push_back(a.node);
    }
  }
  void erase(int64_t seq) {
    auto it = nodes_of_.find(seq);
    if (it == nodes_of_.end()) return;
    for (const auto& node : it->second) {
      auto on = by_node_.find(node);
      on->second.erase(seq);
      if (on->second.empty()) by_node_.erase(on);
    }
    nodes_of_.erase(it);
    all_.erase(seq);
  }

  // Every active job in sequence order.
  const_iterator begin() const { return all_.begin(); }
  const_iterator end() const { return all_.end(); }
  size_t size() const { return all_.size(); }
  bool empty() const { return all_.empty(); }
  bool contains(int64_t seq) const { return all_.count(seq) > 0; }

  // The active jobs with at least one allocation on `node`, in sequence order.
  const std::set<int64_t>& on(const std::string& node) const {
    auto it = by_node_.find(node);
    return it == by_node_.end() ? none_ : it->second;
  }

 private:
  std::set<int64_t> all_;
  std::map<std::string, std::set<int64_t>> by_node_;
  std::map<int64_t, std::vector<std::string>> nodes_of_;  // What insert() put in by_node_.
  // Always empty: what on() returns for a node without jobs.
  std::set<int64_t> none_;
};

}  // namespace tessel::scheduler
