#include "tessel/agent/mthreads_gmi_inventory.hpp"

#include "tessel/agent/mthreads_gmi_parse.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

std::unique_ptr<InventorySource> make_mthreads_gmi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return make_one_call_inventory(runner, config,
                                 {api::Vendor::mthreads, "mthreads-gmi", config.mthreads_gmi, mthreads::query_args(),
                                  mthreads::parse_mthreads_gmi_query});
}

}  // namespace tessel::agent
