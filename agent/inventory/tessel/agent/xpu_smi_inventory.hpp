#pragma once
// The inventory of an Intel Data Center GPU node, read with `xpu-smi discovery -j`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.xpu_smi with intel::discovery_args() on each read() and parses the JSON
// (xpu_smi_parse.hpp). Errors as run_tool's ("xpu-smi timed out after 10 s") or the
// parser's. Every card is healthy. `runner` must outlive the source.
std::unique_ptr<InventorySource> make_xpu_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
