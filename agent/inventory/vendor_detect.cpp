#include "tessel/agent/vendor_detect.hpp"

#include "tessel/agent/executable.hpp"

namespace tessel::agent {

Result<api::Vendor> detect_vendor(const InventoryConfig& config) {
  if (resolve_executable("hl-smi", config.hl_smi, config.path_env)) return api::Vendor::habana;
  if (resolve_executable("nvidia-smi", config.nvidia_smi, config.path_env)) return api::Vendor::nvidia;
  return Error{"no hl-smi or nvidia-smi found"};
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
  std::unique_ptr<InventorySource> source =
      v == api::Vendor::habana ? make_hl_smi_inventory(runner, config) : make_nvidia_smi_inventory(runner, config);
  return source;
}

}  // namespace tessel::agent
