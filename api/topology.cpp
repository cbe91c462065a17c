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

GroupRule group_rule(Vendor v, std::string_view model) {
  if (v == Vendor::neuron && model.substr(0, 3) == "inf") return GroupRule::ring16;
  return group_rule(v);
}

GroupRule group_rule(const NodeInventory& inv) {
  return group_rule(inv.vendor, inv.devices.empty() ? std::string_view{} : std::string_view{inv.devices[0].model});
}

bool any_subset_is_valid(Vendor v) { return group_rule(v) == GroupRule::any_subset; }

bool rule_allows(GroupRule rule, int size) {
  switch (rule) {
    case GroupRule::buddy8: return size == 1 || size == 2 || size == 4 || size == 8;
    case GroupRule::neuron16: return size == 1 || size == 4 || size == 8 || size == 16;
    case GroupRule::ring16: return size >= 1 && size <= 16;
    case GroupRule::any_subset: break;
  }
  return size >= 1 && size <= kMaxDevices;
}

std::string devices_error(int devices, std::optional<Vendor> vendor, std::string_view model) {
  if (devices < 0 || devices > kMaxDevices) return "must be 0 to " + std::to_string(kMaxDevices);
  if (devices == 0 || !vendor) return "";
  const std::string with = " with vendor " + to_string(*vendor);
  if (*vendor == Vendor::neuron && model.empty()) {
    // Trainium's blocks or Inferentia's ring: any count up to a ring of 16.
    return devices <= 16 ? "" : "must be 0 to 16" + with;
  }
  const GroupRule rule = group_rule(*vendor, model);
  if (rule_allows(rule, devices)) return "";
  const std::string and_model = model.empty() ? "" : " and model " + std::string(model);
  switch (rule) {
    case GroupRule::buddy8: return "must be 0, 1, 2, 4 or 8" + with;
    case GroupRule::neuron16: return "must be 0, 1, 4, 8 or 16" + with + and_model;
    case GroupRule::ring16: return "must be 0 to 16" + with + and_model;
    case GroupRule::any_subset: break;
  }
  return "must be 0 to " + std::to_string(kMaxDevices) + with;
}

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

std::map<int, std::vector<Group>> gaudi_groups_within(const std::set<int>& usable) {
  std::map<int, std::vector<Group>> out;
  for (int size : {2, 4, 8}) {
    for (const Group& g : gaudi_groups_of_size(size)) {
      if (std::all_of(g.begin(), g.end(), [&](int m) { return usable.count(m) > 0; })) out[size].push_back(g);
    }
  }
  return out;
}

// Every run of `size` adjacent members of `usable` within 0..15, lowest first.
static std::vector<Group> ring_groups_within(const std::set<int>& usable, int size) {
  std::vector<Group> out;
  for (int start = 0; start + size <= 16; ++start) {
    Group g;
    for (int i = start; i < start + size && usable.count(i) > 0; ++i) g.push_back(i);
    if (static_cast<int>(g.size()) == size) out.push_back(std::move(g));
  }
  return out;
}

std::map<int, std::vector<Group>> groups_within(GroupRule rule, const std::set<int>& usable) {
  if (rule == GroupRule::buddy8) return gaudi_groups_within(usable);
  std::map<int, std::vector<Group>> out;
  if (rule == GroupRule::ring16) {
    for (int size = 2; size <= 16; ++size)
      if (auto g = ring_groups_within(usable, size); !g.empty()) out[size] = std::move(g);
    return out;
  }
  if (rule != GroupRule::neuron16) return out;
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
