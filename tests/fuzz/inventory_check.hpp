#pragma once
// The checks the inventory parsers' fuzz targets make on what a parser returned: the
// devices (and readings) serialise and read back; readings are unique by index.
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/smi_telemetry.hpp"
#include "tessel/api/inventory.hpp"

namespace tessel::fuzz {

// A parser's devices and driver version, as a node inventory of `vendor`, must survive
// the JSON the agent sends the scheduler.
inline void check_round_trip(const agent::smi::ParsedDevices& parsed, api::Vendor vendor) {
  api::NodeInventory inv;
  inv.vendor = vendor;
  inv.driver_version = parsed.driver_version;
  inv.devices = parsed.devices;
  if (!api::inventory_from_json(api::to_json(inv)).ok()) std::abort();
}

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
