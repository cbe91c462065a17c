#include "tessel/api/topology.hpp"

#include <algorithm>

namespace tessel::api {

GroupRule group_rule(Vendor v) {
  switch (v) {
    case Vendor::habana:
    case Vendor::ascend:
    case Vendor::cambricon:
    case Vendor::tpu: return GroupRule::buddy8;
    case Vendor::neuron: return GroupRule::neuron16;
    default: return GroupRule::any_subset;
  }
}

bool any_subset_is_valid(Vendor v) { return group_rule(v) == GroupRule::any_subset; }

const std::vector<Group>& neuron_groups_of_size(int size) {
  static const std::map<int, std::vector<Group>> table = [] {
    std::map<int, std::vector<Group>> out;
    for (int n : {1, 4, 8, 16}) {
      for (int start = 0; start + n <= 16; start += n) {
        Group g;
        for (int i = start; i < start + n; ++i) g.push_back(i);
        out[n].push_back(std::move(g));
      }
    }
    return out;
  }();
  static const std::vector<Group> none;
  auto it = table.find(size);
  return it == table.end() ? none : it->second;
}

const std::vector<Group>& gaudi_groups_of_size(int size) {
  static const std::vector<Group> ones = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  static const std::vector<Group> twos = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  static const std::vector<Group> fours = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  static const std::vector<Group> eights = {{0, 1, 2, 3, 4, 5, 6, 7}};
  static const std::vector<Group> none;
  switch (size) {
    case 1: return ones;
    case 2: return twos;
    case 4: return fours;
    case 8: return eights;
    default: return none;
  }
}

bool is_valid_group_size(int size) { return size == 0 || size == 1 || size == 2 || size == 4 || size == 8; }

std::map<int, std::vector<Group>> gaudi_groups_within(const std::set<int>& usable) {
  std::map<int, std::vector<Group>> out;
  for (int size : {2, 4, 8}) {
    for (const Group& g : gaudi_groups_of_size(size)) {
      if (std::all_of(g.begin(), g.end(), [&](int m) { return usable.count(m) > 0; })) out[size].push_back(g);
    }
  }
  return out;
}

std::map<int, std::vector<Group>> groups_within(Vendor v, const std::set<int>& usable) {
  if (group_rule(v) == GroupRule::buddy8) return gaudi_groups_within(usable);
  std::map<int, std::vector<Group>> out;
  if (group_rule(v) != GroupRule::neuron16) return out;
  for (int size : {4, 8, 16}) {
    for (const Group& g : neuron_groups_of_size(size)) {
      if (std::all_of(g.begin(), g.end(), [&](int m) { return usable.count(m) > 0; })) out[size].push_back(g);
    }
  }
  return out;
}

std::set<int> healthy_module_ids(const NodeInventory& inv) {
  std::set<int> ids;
  for (const Device& d : inv.devices)
    if (d.healthy) ids.insert(d.module_id);
  return ids;
}

}  // namespace tessel::api
