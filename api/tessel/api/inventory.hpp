#pragma once
// The node inventory: what an agent reports and what the scheduler stores and
// serves for each node. The JSON form is the wire contract (see api/openapi.yaml).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::api {

enum class Vendor { habana, nvidia };

std::string to_string(Vendor v);
Result<Vendor> parse_vendor(const std::string& s);

// One accelerator card. Telemetry values the vendor tool printed as N/A are nullopt.
struct Device {
  int index = 0;      // N in /dev/accel/accelN (Gaudi) or the nvidia-smi index.
  int module_id = 0;  // Gaudi OAM slot (stable); NVIDIA: equals index.
  std::string bus_id;
  std::string model;
  std::string serial;
  std::string uuid;
  std::optional<int64_t> memory_total_mib;
  std::optional<int64_t> memory_used_mib;
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> power_w;
  bool healthy = true;
  std::string health_reason;  // Set when !healthy.

  bool operator==(const Device&) const = default;
};

// A group is a list of module ids (Gaudi) or indices (NVIDIA), ascending.
using Group = std::vector<int>;

struct NodeInventory {
  Vendor vendor = Vendor::habana;
  std::string driver_version;
  std::vector<Device> devices;  // In index order.

  bool operator==(const NodeInventory&) const = default;
};

// Serialises with the "groups" field computed from the healthy devices.
nlohmann::json to_json(const NodeInventory& inv);
nlohmann::json to_json(const Device& d);
// Parses an inventory as an agent sends it. Errors name the offending field.
Result<NodeInventory> inventory_from_json(const nlohmann::json& j);

}  // namespace tessel::api
