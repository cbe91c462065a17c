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

// The accelerator vendors of issue 13. Only those with an inventory backend in the
// agent are accepted on the wire: supported_vendors(), parse_vendor().
enum class Vendor { habana, nvidia, amd, intel, ascend, neuron, tpu, cambricon, mthreads };

std::string to_string(Vendor v);
// Accepts the names of supported_vendors() only; the error lists them.
Result<Vendor> parse_vendor(const std::string& s);
// The vendors a node may report and a job may ask for, in enum order.
const std::vector<Vendor>& supported_vendors();
// "habana, nvidia, amd, ascend": the supported names, for messages.
std::string supported_vendor_names();

// One accelerator card. Telemetry values the vendor tool printed as N/A are nullopt.
struct Device {
  int index = 0;      // N in /dev/accel/accelN (Gaudi), else the vendor tool's index.
  int module_id = 0;  // Gaudi OAM slot (stable); other vendors: equals index.
  std::string bus_id;
  std::string model;
  std::string serial;
  std::string uuid;  // Stable; AMD: the ROCr id GPU-<asic serial> when the card has one;
                     // Ascend: NPU-<PCI address>; Neuron: NEURON-<PCI address>.
  std::optional<int64_t> memory_total_mib;
  std::optional<int64_t> memory_used_mib;
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> power_w;
  bool healthy = true;
  std::string health_reason;  // Set when !healthy.
  int cores = 0;              // Neuron: the device's NeuronCores (d*cores .. d*cores+cores-1); else 0.

  bool operator==(const Device&) const = default;
};

// A group is a list of module ids (Gaudi) or indices (other vendors), ascending.
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
