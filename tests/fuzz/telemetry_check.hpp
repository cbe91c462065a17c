#pragma once
// The check every telemetry parser's fuzz target makes on what the parser returned:
// readings unique by index, and devices carrying them serialise and read back.
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/agent/smi_telemetry.hpp"
#include "tessel/api/inventory.hpp"

namespace tessel::fuzz {

inline void check_telemetry(const std::vector<agent::smi::Telemetry>& readings, api::Vendor vendor) {
  std::set<int> indices;
  std::vector<api::Device> devices;
  for (const auto& t : readings) {
    if (!indices.insert(t.index).second) std::abort();
    api::Device d;
    d.index = d.module_id = t.index;
    devices.push_back(d);
  }
  agent::smi::merge_telemetry(readings, devices);
  api::NodeInventory inv;
  inv.vendor = vendor;
  inv.devices = std::move(devices);
  if (!api::inventory_from_json(api::to_json(inv)).ok()) std::abort();
}

}  // namespace tessel::fuzz
