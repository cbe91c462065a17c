#include "tessel/agent/amd_smi_inventory.hpp"

#include "tessel/agent/amd_smi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_amd_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return make_one_call_inventory(
      runner, config, {api::Vendor::amd, "amd-smi", config.amd_smi, amd::static_args(), amd::parse_amd_smi_static});
}

}  // namespace tessel::agent
