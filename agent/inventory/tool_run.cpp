#include "tessel/agent/tool_run.hpp"

#include <cstdio>
#include <cstring>
#include <string.h>

#include "tessel/agent/executable.hpp"
#include "tessel/agent/smi_text.hpp"

namespace tessel::agent {

std::string format_seconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

// The first non-blank lines of a tool's stderr (at most 3, joined by " | ").
static std::string stderr_summary(const std::string& err) {
  std::string out;
  int taken = 0;
  for (std::string_view line : smi::split_lines(err)) {
    line = smi::trim(line);
    if (line.empty()) continue;
    if (taken++ == 3) {
      out += " ...";
      break;
    }
    if (!out.empty()) out += " | ";
    out += std::string(line.substr(0, 200));
  }
  return out.empty() ? "(no stderr)" : out;
}

Result<std::string> run_tool(const std::string& label, const std::string& tool, const std::vector<std::string>& args,
                             CommandRunner& runner, const InventoryConfig& config) {
  auto exe = resolve_executable(label, tool, config.path_env);
  if (!exe) return exe.error();
  std::vector<std::string> argv = {exe->string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto run = runner.run(argv, config.timeout);
  if (!run) return run.error();
  if (run->timed_out) return Error{label + " timed out after " + format_seconds(config.timeout)};
  if (run->signal) {
    const char* abbrev = ::sigabbrev_np(*run->signal);
    return Error{label + " killed by signal " + std::to_string(*run->signal) + " (SIG" + (abbrev ? abbrev : "?") +
                 "): " + stderr_summary(run->err)};
  }
  if (!run->exit_code || *run->exit_code != 0)
    return Error{label + " exited " + (run->exit_code ? std::to_string(*run->exit_code) : "?") + ": " +
                 stderr_summary(run->err)};
  return std::move(run->out);
}

api::NodeInventory to_inventory(api::Vendor vendor, smi::ParsedDevices parsed) {
  api::NodeInventory inv;
  inv.vendor = vendor;
  inv.driver_version = std::move(parsed.driver_version);
  inv.devices = std::move(parsed.devices);
  return inv;
}

namespace {

class OneCallInventory final : public InventorySource {
 public:
  OneCallInventory(CommandRunner& runner, InventoryConfig config, OneCallTool tool,
                   std::optional<TelemetryCall> telemetry)
      : runner_(runner), config_(std::move(config)), tool_(std::move(tool)), telemetry_(std::move(telemetry)) {}

  Result<api::NodeInventory> read() override {
    auto out = run_tool(tool_.label, tool_.path, tool_.args, runner_, config_);
    if (!out) return out.error();
    auto parsed = tool_.parse(*out);
    if (!parsed) return parsed.error();
    api::NodeInventory inv = to_inventory(tool_.vendor, std::move(*parsed));
    if (telemetry_ && !inv.devices.empty()) read_telemetry(*telemetry_, inv.devices);
    return inv;
  }

 private:
  // Best effort (header): a failed call or parse leaves the readings empty.
  void read_telemetry(const TelemetryCall& call, std::vector<api::Device>& devices) {
    auto out = run_tool(tool_.label, tool_.path, call.args, runner_, config_);
    if (!out) return;
    auto readings = call.parse(*out);
    if (readings) smi::merge_telemetry(*readings, devices);
  }

  CommandRunner& runner_;
  InventoryConfig config_;
  OneCallTool tool_;
  std::optional<TelemetryCall> telemetry_;
};

}  // namespace

std::unique_ptr<InventorySource> make_one_call_inventory(CommandRunner& runner, const InventoryConfig& config,
                                                         OneCallTool tool, std::optional<TelemetryCall> telemetry) {
  return std::make_unique<OneCallInventory>(runner, config, std::move(tool), std::move(telemetry));
}

}  // namespace tessel::agent
