#pragma once
// The inventory of an AMD Instinct node, read with `amd-smi static ... --json`, and the
// cards' readings with `amd-smi metric ... --json`.

#include <memory>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"

namespace tessel::agent {

// Runs config.amd_smi with amd::static_args() on each read() and parses the JSON
// (amd_smi_parse.hpp). Errors as run_tool's ("amd-smi timed out after 10 s") or the
// parser's. amd-smi reports no health flag: every card is healthy. Then, when there are
// cards, amd::metric_args() for utilization, power, temperature and memory used
// (amd_smi_metric.hpp); when that call fails the cards simply have no readings
// (make_one_call_inventory). `runner` must outlive the source.
// When config.amd_smi does not resolve but rocm-smi is in config.path_env, the source
// reads rocm-smi instead (rocm_smi_parse.hpp), errors named "rocm-smi", with no
// second call.
std::unique_ptr<InventorySource> make_amd_smi_inventory(CommandRunner& runner, const InventoryConfig& config);

}  // namespace tessel::agent
