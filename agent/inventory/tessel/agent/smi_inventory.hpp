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
// For hl-smi it then runs `hl-smi -n link -i <bus id>` for each card (same timeout:
// the per-card form is the one Intel's own health checks call; what hl-smi prints
// for all cards at once is not documented) for the cards' port link state, on the
// first read and then every config.ports_every reads, or sooner when the cards changed
// or the last port read failed; reads in between keep the last state. When a port
// read fails the inventory still stands, with ports_error set.
// Firmware versions come from `hl-smi -L`, run on the first read and again only when
// the driver version or the cards (bus id, uuid) change or the previous read failed
// (a firmware update needs the driver reloaded); steady state is one call per read,
// plus one per card every ports_every reads.
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
  Status read_card_ports(api::Device& d);
  void read_firmware(api::NodeInventory& inv);

  const smi::Dialect& dialect_;
  std::string tool_path_;
  CommandRunner& runner_;
  InventoryConfig config_;
  std::string firmware_key_;                     // Driver and cards firmware_ was read for; "" none.
  std::map<std::string, std::string> firmware_;  // By lower-case bus id.
  // The last port read: the cards it was for (bus ids), their devices' port fields
  // (or its error), and reads since.
  std::string ports_key_;
  std::map<std::string, api::Device> ports_;
  std::string ports_error_;
  int reads_since_ports_ = 0;
};

// SmiInventory for hl-smi (config.hl_smi) / nvidia-smi (config.nvidia_smi).
std::unique_ptr<InventorySource> make_hl_smi_inventory(CommandRunner& runner, const InventoryConfig& config);
std::unique_ptr<InventorySource> make_nvidia_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
