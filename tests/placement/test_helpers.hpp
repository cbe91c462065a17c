#pragma once
// Builders shared by the placement tests.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::testing {

// A Gaudi node with cards at `module_ids` (index = 7 - module id, to catch mix-ups).
inline NodeSpec gaudi_node(const std::string& name, std::vector<int> module_ids = {0, 1, 2, 3, 4, 5, 6, 7},
                           std::set<int> unhealthy = {}, const std::string& model = "HL-225") {
  NodeSpec n;
  n.name = name;
  n.vendor = api::Vendor::habana;
  for (int m : module_ids) n.cards.push_back({m, 7 - m, model, unhealthy.count(m) == 0});
  return n;
}

inline NodeSpec nvidia_node(const std::string& name, int cards, const std::string& model = "A100") {
  NodeSpec n;
  n.name = name;
  n.vendor = api::Vendor::nvidia;
  for (int i = 0; i < cards; ++i) n.cards.push_back({i, i, model, true});
  return n;
}

inline PendingJob job(const std::string& id, int devices, int nodes = 1, int priority = 0, int64_t seq = 0,
                      std::optional<int64_t> time_limit_s = std::nullopt) {
  PendingJob j;
  j.id = id;
  j.devices = devices;
  j.nodes = nodes;
  j.priority = priority;
  j.seq = seq;
  j.time_limit_s = time_limit_s;
  return j;
}

inline const Placement* find_placement(const ScheduleResult& r, const std::string& id) {
  for (const Placement& p : r.placed)
    if (p.job_id == id) return &p;
  return nullptr;
}

inline std::string reason(const ScheduleResult& r, const std::string& id) {
  const std::string* why = r.pending_reasons.find(id);
  return why ? *why : std::string("<placed or missing>");
}

}  // namespace tessel::scheduler::testing
