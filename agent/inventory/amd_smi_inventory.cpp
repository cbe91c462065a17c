#include "tessel/agent/amd_smi_inventory.hpp"

#include "tessel/agent/amd_smi_metric.hpp"
#include "tessel/agent/amd_smi_parse.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/rocm_smi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_amd_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  if (!resolve_executable("amd-smi", config.amd_smi, config.path_env) &&
      resolve_executable("rocm-smi", config.rocm_smi, config.path_env))
    return make_one_call_inventory(
        runner, config, {api::Vendor::amd, "rocm-smi", config.rocm_smi, amd::rocm_smi_args(), amd::parse_rocm_smi});
  return make_one_call_inventory(
      runner, config, {api::Vendor::amd, "amd-smi", config.amd_smi, amd::static_args(), amd::parse_amd_smi_static},
      TelemetryCall{amd::metric_args(), amd::parse_amd_smi_metric});
}

}  // namespace tessel::agent
