#pragma once
// The inventory of a Cambricon MLU node, read with `cnmon info -e -m -u -j`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// On each read(): makes a private directory under the system temp directory, runs
// config.cnmon with cambricon::info_args() there (through `/usr/bin/env -C <dir>`:
// cnmon writes cnmon_info.json into its working directory, and CommandRunner has no
// working-directory option), parses that file (cnmon_parse.hpp) and deletes the directory,
// whatever happened. Errors as run_tool's, named "cnmon" ("cnmon timed out after 10 s"),
// "cnmon wrote no cnmon_info.json", or the parser's. Every card is healthy. `runner` must
// outlive the source; reads may run from several threads at once.
std::unique_ptr<InventorySource> make_cnmon_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
