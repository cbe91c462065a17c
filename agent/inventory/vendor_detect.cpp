#include "tessel/agent/vendor_detect.hpp"

#include "tessel/agent/amd_smi_inventory.hpp"
#include "tessel/agent/cnmon_inventory.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/mthreads_gmi_inventory.hpp"
#include "tessel/agent/neuron_ls_inventory.hpp"
#include "tessel/agent/npu_smi_inventory.hpp"
#include "tessel/agent/tpu_inventory.hpp"
#include "tessel/agent/xpu_smi_inventory.hpp"

namespace tessel::agent {

namespace {

struct Tool {
  api::Vendor vendor;
  const char* name;
  std::string InventoryConfig::*path;
};

// In the order `auto` tries them.
const Tool kTools[] = {
    {api::Vendor::habana, "hl-smi", &InventoryConfig::hl_smi},
    {api::Vendor::nvidia, "nvidia-smi", &InventoryConfig::nvidia_smi},
    {api::Vendor::amd, "amd-smi", &InventoryConfig::amd_smi},
    {api::Vendor::ascend, "npu-smi", &InventoryConfig::npu_smi},
    {api::Vendor::intel, "xpu-smi", &InventoryConfig::xpu_smi},
    {api::Vendor::neuron, "neuron-ls", &InventoryConfig::neuron_ls},
    {api::Vendor::mthreads, "mthreads-gmi", &InventoryConfig::mthreads_gmi},
    {api::Vendor::cambricon, "cnmon", &InventoryConfig::cnmon},
};

}  // namespace

Result<api::Vendor> detect_vendor(const InventoryConfig& config) {
  for (const Tool& t : kTools)
    if (resolve_executable(t.name, config.*t.path, config.path_env) ||
        (t.vendor == api::Vendor::amd && resolve_executable("rocm-smi", config.rocm_smi, config.path_env)))
      return t.vendor;
  if (has_tpu(config.sysfs_root)) return api::Vendor::tpu;
  return Error{"no hl-smi, nvidia-smi, amd-smi, npu-smi, xpu-smi, neuron-ls, mthreads-gmi, cnmon or TPU chip found"};
}

Result<std::unique_ptr<InventorySource>> make_inventory_source(const std::string& vendor, CommandRunner& runner,
                                                               const InventoryConfig& config) {
  api::Vendor v;
  if (vendor == "auto") {
    auto detected = detect_vendor(config);
    if (!detected) return detected.error();
    v = *detected;
  } else {
    auto parsed = api::parse_vendor(vendor);
    if (!parsed) return parsed.error();
    v = *parsed;
  }
  switch (v) {
    case api::Vendor::habana: return make_hl_smi_inventory(runner, config);
    case api::Vendor::nvidia: return make_nvidia_smi_inventory(runner, config);
    case api::Vendor::amd: return make_amd_smi_inventory(runner, config);
    case api::Vendor::ascend: return make_npu_smi_inventory(runner, config);
    case api::Vendor::intel: return make_xpu_smi_inventory(runner, config);
    case api::Vendor::neuron: return make_neuron_ls_inventory(runner, config);
    case api::Vendor::mthreads: return make_mthreads_gmi_inventory(runner, config);
    case api::Vendor::cambricon: return make_cnmon_inventory(runner, config);
    case api::Vendor::tpu: return make_tpu_inventory(config);
    default: return Error{"no inventory backend for vendor " + api::to_string(v)};
  }
}

const std::vector<std::string>& vendor_choices() {
  static const std::vector<std::string> choices = [] {
    std::vector<std::string> out;
    for (api::Vendor v : api::supported_vendors()) out.push_back(api::to_string(v));
    out.push_back("auto");
    return out;
  }();
  return choices;
}

}  // namespace tessel::agent
