#pragma once
// The node's shape for tasks (issue 28): the agent's allowed CPUs, memory and NUMA
// layout, and each card's NUMA node, read from the kernel; and an InventorySource that
// adds them (and the isolation in force) to the vendor tool's inventory.

#include <optional>
#include <string>
#include <vector>

#include "tessel/agent/inventory_source.hpp"
#include "tessel/api/inventory.hpp"

namespace tessel::agent {

struct HostShape {
  std::vector<int> cpus;            // The agent's allowed CPUs (sched_getaffinity), ascending.
  int64_t memory_mib = 0;           // MemTotal of /proc/meminfo.
  std::vector<api::NumaNode> numa;  // Each node's CPUs among `cpus`; nodes with none left out.
};

// Reads <sysfs_root>/devices/system/node/node*/cpulist for the NUMA layout; `meminfo`
// is /proc/meminfo's text; `allowed` the agent's CPUs.
HostShape host_shape(const std::string& sysfs_root, const std::vector<int>& allowed, const std::string& meminfo);
// This process's allowed CPUs, ascending.
std::vector<int> allowed_cpus();
// The NUMA node of the PCI device `bus_id` (any case, 4- or 8-digit domain), from
// <sysfs_root>/bus/pci/devices/<bus_id>/numa_node; nullopt when unknown or -1.
std::optional<int> card_numa_node(const std::string& sysfs_root, const std::string& bus_id);

// The vendor tool's inventory plus the host's shape, the isolation in force
// ("cgroup1", "cgroup2", "none"), the container runtime and each card's NUMA node.
class HostShapeSource final : public InventorySource {
 public:
  HostShapeSource(InventorySource& inner, HostShape shape, std::string isolation, std::string sysfs_root)
      : inner_(inner), shape_(std::move(shape)), isolation_(std::move(isolation)), sysfs_root_(std::move(sysfs_root)) {}
  Result<api::NodeInventory> read() override;
  // The container runtime to report ("podman 4.3.1, runc"; "": runs no images).
  void set_containers(std::string containers) { containers_ = std::move(containers); }

 private:
  InventorySource& inner_;
  const HostShape shape_;
  const std::string isolation_;
  const std::string sysfs_root_;
  std::string containers_;  // Set before the first read().
};

}  // namespace tessel::agent
