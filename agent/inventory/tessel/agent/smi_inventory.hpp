#pragma once
// The inventory read from hl-smi (Gaudi) or nvidia-smi (NVIDIA), plus sysfs health
// for Gaudi cards.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/smi_dialect.hpp"

namespace tessel::agent {

// Runs `<tool> <query> <format>` through `runner` on each read() and parses the rows.
// For hl-smi it then runs `hl-smi -n link` once (same timeout) for the cards' port
// link state; when that fails the inventory still stands, with ports_error set.
// Firmware versions come from `hl-smi -L`, run on the first read and again only when
// the driver version or the cards (bus id, uuid) change or the previous read failed
// (a firmware update needs the driver reloaded); steady state is two calls per read.
// A Gaudi driver or firmware version hl-smi did not print reads "unknown".
// Errors: "hl-smi not found at /x", "hl-smi timed out after 10 s", "hl-smi exited 3:
// <first lines of stderr>", "hl-smi killed by signal 11 (SIGSEGV): ...", or the
// parser's "hl-smi line 3: ...". `runner` must outlive the source. read() may be
// called from one thread at a time.
class SmiInventory final : public InventorySource {
 public:
  SmiInventory(const smi::Dialect& dialect, std::string tool_path, CommandRunner& runner, InventoryConfig config);
  Result<api::NodeInventory> read() override;

  // The argv read() runs, given the resolved executable (for tests and logs).
  std::vector<std::string> command(const std::string& executable) const;

 private:
  void read_ports(api::NodeInventory& inv);
  void read_firmware(api::NodeInventory& inv);

  const smi::Dialect& dialect_;
  std::string tool_path_;
  CommandRunner& runner_;
  InventoryConfig config_;
  std::string firmware_key_;                     // Driver and cards firmware_ was read for; "" none.
  std::map<std::string, std::string> firmware_;  // By lower-case bus id.
};

// SmiInventory for hl-smi (config.hl_smi) / nvidia-smi (config.nvidia_smi).
std::unique_ptr<InventorySource> make_hl_smi_inventory(CommandRunner& runner, const InventoryConfig& config);
std::unique_ptr<InventorySource> make_nvidia_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
