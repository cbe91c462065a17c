#pragma once
// Running a vendor tool once and keeping its stdout, with the error messages every
// inventory source uses; and the inventory source of tools read with one call.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// Resolves `tool` (a path, or a name in config.path_env), runs it with `args` for at
// most config.timeout and returns its stdout when it exits 0. Errors, named by `label`:
// "amd-smi not found at /x", "amd-smi timed out after 10 s", "amd-smi exited 3: <first
// lines of stderr>", "amd-smi killed by signal 11 (SIGSEGV): ...".
Result<std::string> run_tool(const std::string& label, const std::string& tool, const std::vector<std::string>& args,
                             CommandRunner& runner, const InventoryConfig& config);

// The node inventory of `vendor` from a parser's devices and driver version.
api::NodeInventory to_inventory(api::Vendor vendor, smi::ParsedDevices parsed);

// A tool whose one call gives the whole inventory (amd-smi, npu-smi): which, how to
// call it, and its parser (which also decides each card's health).
struct OneCallTool {
  api::Vendor vendor = api::Vendor::habana;
  std::string label;  // Names the tool in errors: "amd-smi".
  std::string path;   // The configured path or name (InventoryConfig::amd_smi, ...).
  std::vector<std::string> args;
  Result<smi::ParsedDevices> (*parse)(std::string_view stdout_text) = nullptr;
};

// Runs the tool (run_tool) on each read() and parses its output into the inventory.
// `runner` must outlive the source.
std::unique_ptr<InventorySource> make_one_call_inventory(CommandRunner& runner, const InventoryConfig& config,
                                                         OneCallTool tool);

// "10 s", "0.3 s": how timeouts read in messages.
std::string format_seconds(std::chrono::milliseconds d);

}  // namespace tessel::agent
