#pragma once
// Choosing the vendor tool for `--vendor auto`, and building the matching source.

#include <memory>
#include <string>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/smi_inventory.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// habana when config.hl_smi resolves to an executable (path, or name in
// config.path_env), else nvidia when config.nvidia_smi does, else the error
// "no hl-smi or nvidia-smi found". Looks at files only; runs nothing.
Result<api::Vendor> detect_vendor(const InventoryConfig& config);

// `vendor` is "habana", "nvidia" or "auto". The source reads through `runner`, which
// must outlive it.
Result<std::unique_ptr<InventorySource>> make_inventory_source(const std::string& vendor, CommandRunner& runner,
                                                               const InventoryConfig& config);

}  // namespace tessel::agent
