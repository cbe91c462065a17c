#include "tessel/agent/smi_inventory.hpp"

#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/sysfs_health.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

SmiInventory::SmiInventory(const smi::Dialect& dialect, std::string tool_path, CommandRunner& runner,
                           InventoryConfig config)
    : dialect_(dialect), tool_path_(std::move(tool_path)), runner_(runner), config_(std::move(config)) {}

std::vector<std::string> SmiInventory::command(const std::string& executable) const {
  const std::string fields = smi::join_fields(dialect_.default_query);
  if (dialect_.vendor == api::Vendor::habana) return {executable, "-Q", fields, "-f", "csv,noheader,nounits"};
  return {executable, "--query-gpu=" + fields, "--format=csv,noheader,nounits"};
}

Result<api::NodeInventory> SmiInventory::read() {
  std::vector<std::string> argv = command("");
  argv.erase(argv.begin());
  auto out = run_tool(dialect_.tool, tool_path_, argv, runner_, config_);
  if (!out) return out.error();
  auto parsed = smi::parse_devices(dialect_, *out, dialect_.default_query);
  if (!parsed) return parsed.error();
  api::NodeInventory inv;
  inv.vendor = dialect_.vendor;
  inv.driver_version = parsed->driver_version;
  inv.devices = std::move(parsed->devices);
  if (dialect_.vendor == api::Vendor::habana) apply_sysfs_health(config_.sysfs_root, inv.devices);
  return inv;
}

std::unique_ptr<InventorySource> make_hl_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::hl_smi_dialect(), config.hl_smi, runner, config);
}

std::unique_ptr<InventorySource> make_nvidia_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::nvidia_smi_dialect(), config.nvidia_smi, runner, config);
}

}  // namespace tessel::agent
