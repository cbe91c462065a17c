#pragma once
// The inventory of a Google Cloud TPU host: a scan of <sysfs root>/bus/pci/devices.

#include <filesystem>
#include <memory>

#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/tpu_pci.hpp"

namespace tessel::agent {

// The PCI functions under <sysfs_root>/bus/pci/devices with their vendor and device
// files; a function whose files cannot be read is left out. Error when the directory
// cannot be listed: "TPU: cannot list /sys/bus/pci/devices: No such file or directory".
Result<std::vector<tpu::PciFunction>> scan_pci(const std::filesystem::path& sysfs_root);

// True when scan_pci() finds a TPU chip (tpu_pci.hpp). For `--vendor auto`.
bool has_tpu(const std::filesystem::path& sysfs_root);

// Scans config.sysfs_root on each read() (runs nothing). Errors: scan_pci()'s, and "no
// Google TPU chip (PCI vendor 0x1ae0) under /sys/bus/pci/devices" when there is none.
// Every chip is healthy. Safe to call from several threads at once.
std::unique_ptr<InventorySource> make_tpu_inventory(const InventoryConfig& config);

}  // namespace tessel::agent
