#include "tessel/agent/npu_smi_inventory.hpp"

#include "tessel/agent/npu_smi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_npu_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return make_one_call_inventory(
      runner, config,
      {api::Vendor::ascend, "npu-smi", config.npu_smi, ascend::info_args(), ascend::parse_npu_smi_info});
}

}  // namespace tessel::agent
