#include "tessel/agent/neuron_ls_inventory.hpp"

#include "tessel/agent/neuron_ls_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_neuron_ls_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return make_one_call_inventory(
      runner, config,
      {api::Vendor::neuron, "neuron-ls", config.neuron_ls, neuron::list_args(), neuron::parse_neuron_ls});
}

}  // namespace tessel::agent
