#pragma once
// The inventory of a Moore Threads GPU node, read with `mthreads-gmi -q -j`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.mthreads_gmi with mthreads::query_args() on each read() and parses the JSON
// (mthreads_gmi_parse.hpp). Errors as run_tool's ("mthreads-gmi timed out after 10 s") or the
// parser's. Every card is healthy. `runner` must outlive the source.
std::unique_ptr<InventorySource> make_mthreads_gmi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
