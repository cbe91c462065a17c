#pragma once
// The inventory of an Intel Data Center GPU node, read with `xpu-smi discovery -j`, and
// the cards' readings with one `xpu-smi dump` over all of them.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.xpu_smi with intel::discovery_args() on each read() and parses the JSON
// (xpu_smi_parse.hpp). Errors as run_tool's ("xpu-smi timed out after 10 s") or the
// parser's. Every card is healthy. Then, when there are cards, intel::dump_args() for
// utilization, power, core temperature and memory used (xpu_smi_dump.hpp), merged by
// device id; when that call fails the cards simply have no readings
// (make_one_call_inventory). `runner` must outlive the source.
std::unique_ptr<InventorySource> make_xpu_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
