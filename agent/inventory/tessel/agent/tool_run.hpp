#pragma once
// Running a vendor tool once and keeping its stdout, with the error messages every
// inventory source uses.

#include <chrono>
#include <string>
#include <vector>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// Resolves `tool` (a path, or a name in config.path_env), runs it with `args` for at
// most config.timeout and returns its stdout when it exits 0. Errors, named by `label`:
// "amd-smi not found at /x", "amd-smi timed out after 10 s", "amd-smi exited 3: <first
// lines of stderr>", "amd-smi killed by signal 11 (SIGSEGV): ...".
Result<std::string> run_tool(const std::string& label, const std::string& tool, const std::vector<std::string>& args,
                             CommandRunner& runner, const InventoryConfig& config);

// "10 s", "0.3 s": how timeouts read in messages.
std::string format_seconds(std::chrono::milliseconds d);

}  // namespace tessel::agent
