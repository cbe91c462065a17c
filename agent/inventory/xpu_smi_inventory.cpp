#include "tessel/agent/xpu_smi_inventory.hpp"

#include "tessel/agent/tool_run.hpp"
#include "tessel/agent/xpu_smi_dump.hpp"
#include "tessel/agent/xpu_smi_parse.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_xpu_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return make_one_call_inventory(
      runner, config,
      {api::Vendor::intel, "xpu-smi", config.xpu_smi, intel::discovery_args(), intel::parse_xpu_smi_discovery},
      TelemetryCall{intel::dump_args(), intel::parse_xpu_smi_dump});
}

}  // namespace tessel::agent
