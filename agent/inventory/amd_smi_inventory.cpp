#include "tessel/agent/amd_smi_inventory.hpp"

#include "tessel/agent/amd_smi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

namespace {

class AmdSmiInventory final : public InventorySource {
 public:
  AmdSmiInventory(CommandRunner& runner, InventoryConfig config) : runner_(runner), config_(std::move(config)) {}

  Result<api::NodeInventory> read() override {
    auto out = run_tool("amd-smi", config_.amd_smi, amd::static_args(), runner_, config_);
    if (!out) return out.error();
    auto parsed = amd::parse_amd_smi_static(*out);
    if (!parsed) return parsed.error();
    api::NodeInventory inv;
    inv.vendor = api::Vendor::amd;
    inv.driver_version = parsed->driver_version;
    inv.devices = std::move(parsed->devices);
    return inv;
  }

 private:
  CommandRunner& runner_;
  InventoryConfig config_;
};

}  // namespace

std::unique_ptr<InventorySource> make_amd_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<AmdSmiInventory>(runner, config);
}

}  // namespace tessel::agent
