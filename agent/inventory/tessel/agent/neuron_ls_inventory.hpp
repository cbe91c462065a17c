#pragma once
// The inventory of an AWS Trainium / Inferentia node, read with `neuron-ls -j`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.neuron_ls with neuron::list_args() on each read() and parses the JSON
// (neuron_ls_parse.hpp). Errors as run_tool's ("neuron-ls timed out after 10 s") or the
// parser's. Every device is healthy. `runner` must outlive the source.
std::unique_ptr<InventorySource> make_neuron_ls_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
