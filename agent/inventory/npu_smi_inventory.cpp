#include "tessel/agent/npu_smi_inventory.hpp"

#include "tessel/agent/npu_smi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

namespace {

class NpuSmiInventory final : public InventorySource {
 public:
  NpuSmiInventory(CommandRunner& runner, InventoryConfig config) : runner_(runner), config_(std::move(config)) {}

  Result<api::NodeInventory> read() override {
    auto out = run_tool("npu-smi", config_.npu_smi, ascend::info_args(), runner_, config_);
    if (!out) return out.error();
    auto parsed = ascend::parse_npu_smi_info(*out);
    if (!parsed) return parsed.error();
    api::NodeInventory inv;
    inv.vendor = api::Vendor::ascend;
    inv.driver_version = parsed->driver_version;
    inv.devices = std::move(parsed->devices);
    return inv;
  }

 private:
  CommandRunner& runner_;
  InventoryConfig config_;
};

}  // namespace

std::unique_ptr<InventorySource> make_npu_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<NpuSmiInventory>(runner, config);
}

}  // namespace tessel::agent
