#include "tessel/agent/smi_inventory.hpp"

#include <cstdio>
#include <cstring>
#include <string.h>

#include "tessel/agent/executable.hpp"
#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/smi_text.hpp"
#include "tessel/agent/sysfs_health.hpp"

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

SmiInventory::SmiInventory(const smi::Dialect& dialect, std::string tool_path, CommandRunner& runner,
                           InventoryConfig config)
    : dialect_(dialect), tool_path_(std::move(tool_path)), runner_(runner), config_(std::move(config)) {}

std::vector<std::string> SmiInventory::command(const std::string& executable) const {
  const std::string fields = smi::join_fields(dialect_.default_query);
  if (dialect_.vendor == api::Vendor::habana) return {executable, "-Q", fields, "-f", "csv,noheader,nounits"};
  return {executable, "--query-gpu=" + fields, "--format=csv,noheader,nounits"};
}

Result<api::NodeInventory> SmiInventory::read() {
  const std::string& tool = dialect_.tool;
  auto exe = resolve_executable(tool, tool_path_, config_.path_env);
  if (!exe) return exe.error();
  auto run = runner_.run(command(exe->string()), config_.timeout);
  if (!run) return run.error();
  if (run->timed_out) return Error{tool + " timed out after " + format_seconds(config_.timeout)};
  if (run->signal) {
    const char* abbrev = ::sigabbrev_np(*run->signal);
    return Error{tool + " killed by signal " + std::to_string(*run->signal) + " (SIG" + (abbrev ? abbrev : "?") +
                 "): " + stderr_summary(run->err)};
  }
  if (!run->exit_code || *run->exit_code != 0)
    return Error{tool + " exited " + (run->exit_code ? std::to_string(*run->exit_code) : "?") + ": " +
                 stderr_summary(run->err)};
  auto parsed = smi::parse_devices(dialect_, run->out, dialect_.default_query);
  if (!parsed) return parsed.error();
  api::NodeInventory inv;
  inv.vendor = dialect_.vendor;
  inv.driver_version = parsed->driver_version;
  inv.devices = std::move(parsed->devices);
  if (dialect_.vendor == api::Vendor::habana) apply_sysfs_health(config_.sysfs_root, inv.devices);
  return inv;
}

std::unique_ptr<InventorySource> make_hl_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::hl_smi_dialect(), config.hl_smi, runner, config);
}

std::unique_ptr<InventorySource> make_nvidia_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::nvidia_smi_dialect(), config.nvidia_smi, runner, config);
}

}  // namespace tessel::agent
