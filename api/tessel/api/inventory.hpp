#pragma once
// The node inventory: what an agent reports and what the scheduler stores and
// serves for each node. The JSON form is the wire contract (see api/openapi.yaml).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/labels.hpp"
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
  // Gaudi: the firmware version hl-smi reports for the card; "" when not known.
  std::string firmware_version;
  // Gaudi: link state of the card's NIC ports from hl-smi's port query; nullopt when
  // the vendor has no such query or it failed. ports_down lists the port numbers
  // that are not up, ascending. Such a card's node is not used for multi-node gangs.
  std::optional<int> ports_total;
  std::optional<int> ports_up;
  std::vector<int> ports_down;
  int cores = 0;  // Neuron: the device's NeuronCores (d*cores .. d*cores+cores-1); else 0.
  // The NUMA node the card hangs off (sysfs numa_node of its PCI device); nullopt when
  // not known (no bus id, no NUMA, or -1 in sysfs). Shape, not a reading.
  std::optional<int> numa_node;

  bool operator==(const Device&) const = default;
};

// A group is a list of module ids (Gaudi) or indices (other vendors), ascending.
using Group = std::vector<int>;

// One NUMA node of the host: its id and the agent's allowed CPUs on it, ascending.
struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  bool operator==(const NumaNode&) const = default;
};

// How the agent fences its tasks (issue 28): "cgroup2", "cgroup1", "none", or "" from
// agents that predate isolation.
inline constexpr const char* kIsolationKinds[] = {"cgroup2", "cgroup1", "none"};

struct NodeInventory {
  Vendor vendor = Vendor::habana;
  std::string driver_version;   // Gaudi: "unknown" when hl-smi did not print it.
  std::vector<Device> devices;  // In index order.
  // Why the port query failed ("" when it worked or the vendor has none). The cards
  // then carry no port state; the node still runs single-node jobs and gangs.
  std::string ports_error;
  // The host's shape for tasks: the agent's allowed CPUs (count), its memory, and the
  // NUMA layout of those CPUs. 0 / empty (absent on the wire) when not reported.
  int cpus = 0;
  int64_t memory_mib = 0;
  std::vector<NumaNode> numa;  // By id, ascending.
  std::string isolation;       // See kIsolationKinds; "" when not reported.
  // What runs jobs' images (issue 29): "podman 4.3.1, runc"; "" when the node runs no
  // images (or its agent predates them).
  std::string containers;
  // The labels its agent was started with (tessel-agent --label, issue 32); absent on
  // the wire when none. Admins' labels are the scheduler's (NodeRecord::labels).
  Labels labels;

  bool operator==(const NodeInventory&) const = default;
};

// A card's readings: what changes from one heartbeat to the next while the card stays
// the same card in the same health. Everything else of a Device is its shape.
struct DeviceReading {
  int index = 0;  // Device::index.
  std::optional<int64_t> memory_used_mib;
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> power_w;

  bool operator==(const DeviceReading&) const = default;
};
// The readings of every card of `inv`, in its order.
std::vector<DeviceReading> readings_of(const NodeInventory& inv);
// Whether `a` and `b` differ in readings only (the same cards, fields and health).
bool same_but_readings(const NodeInventory& a, const NodeInventory& b);
// Sets the readings of `inv`'s cards: `readings` must name every card of `inv`, in its
// order (field "readings" otherwise, and `inv` is left as it was).
Status apply_readings(NodeInventory& inv, const std::vector<DeviceReading>& readings);
nlohmann::json to_json(const DeviceReading& r);
// A JSON array of readings; errors name the field ("readings[2].power_w").
Result<std::vector<DeviceReading>> readings_from_json(const nlohmann::json& j);

// Serialises with the "groups" field computed from the healthy devices.
nlohmann::json to_json(const NodeInventory& inv);
nlohmann::json to_json(const Device& d);

// "module 5" / "modules 1, 5": the cards of `inv` with an external port down;
// "" when none has. Used in pending reasons and by the CLI.
std::string modules_with_ports_down(const NodeInventory& inv);

// Whether a node's driver version satisfies a job's `driver_version` constraint:
// equal, or `want` is a prefix of `have` ending at a version boundary (the next
// character of `have` is '.' or '-'), so "1.17" and "1.17.0" both match
// "1.17.0-e4d8f8b". An empty `want` matches everything.
bool driver_version_matches(const std::string& want, const std::string& have);
// "0-3,8,10-11": a CPU list in the kernel's format (cpuset.cpus, sysfs cpulist), and
// back. Parsing refuses anything else (errors say why) and CPUs past kMaxCpuId.
inline constexpr int kMaxCpuId = 65535;
std::string format_cpu_list(const std::vector<int>& ascending_cpus);
Result<std::vector<int>> parse_cpu_list(const std::string& text);

// Parses an inventory as an agent sends it. Errors name the offending field.
Result<NodeInventory> inventory_from_json(const nlohmann::json& j);

}  // namespace tessel::api
