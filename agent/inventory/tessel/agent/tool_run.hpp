#pragma once
// Running a vendor tool once and keeping its stdout, with the error messages every
// inventory source uses; and the inventory source of tools read with one call (plus,
// for some, a second call for the cards' live readings).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/smi_telemetry.hpp"
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

// A second call of the same tool for the cards' live readings (amd-smi metric,
// xpu-smi dump), where the inventory call prints none.
struct TelemetryCall {
  std::vector<std::string> args;
  Result<std::vector<smi::Telemetry>> (*parse)(std::string_view stdout_text) = nullptr;
};

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
// With a `telemetry` call, it then runs that (same timeout) when there are devices and
// merges the readings by index. Readings are extra: when that call fails (not found,
// timeout, exit status, output its parser refuses) the inventory stands as the first
// call gave it, with empty telemetry, and nothing is reported, since nothing on the
// node is wrong for placement. `runner` must outlive the source.
std::unique_ptr<InventorySource> make_one_call_inventory(CommandRunner& runner, const InventoryConfig& config,
                                                         OneCallTool tool,
                                                         std::optional<TelemetryCall> telemetry = std::nullopt);

// "10 s", "0.3 s": how timeouts read in messages.
std::string format_seconds(std::chrono::milliseconds d);

}  // namespace tessel::agent
