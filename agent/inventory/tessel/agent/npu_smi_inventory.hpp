#pragma once
// The inventory of a Huawei Ascend node, read with `npu-smi info`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.npu_smi with ascend::info_args() on each read() and parses the table
// (npu_smi_parse.hpp). Errors as run_tool's ("npu-smi timed out after 10 s") or the
// parser's. Health is npu-smi's own Health column. `runner` must outlive the source.
std::unique_ptr<InventorySource> make_npu_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
