#include "tessel/agent/smi_inventory.hpp"

#include <cctype>

#include "tessel/agent/hl_smi_cards.hpp"
#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/sysfs_health.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

SmiInventory::SmiInventory(const smi::Dialect& dialect, std::string tool_path, CommandRunner& runner,
                           InventoryConfig config)
    : dialect_(dialect), tool_path_(std::move(tool_path)), runner_(runner), config_(std::move(config)) {}

std::vector<std::string> SmiInventory::command(const std::string& executable) const {
  const std::string fields = smi::join_fields(dialect_.default_query);
  if (dialect_.vendor == api::Vendor::habana) return {executable, "-Q", fields, "-f", "csv,noheader,nounits"};
  return {executable, "--query-gpu=" + fields, "--format=csv,noheader,nounits"};
}

Result<api::NodeInventory> SmiInventory::read() {
  std::vector<std::string> argv = command("");
  argv.erase(argv.begin());
  auto out = run_tool(dialect_.tool, tool_path_, argv, runner_, config_);
  if (!out) {
    firmware_key_.clear();  // The driver may be reloaded, with new firmware, before the next read.
    return out.error();
  }
  auto parsed = smi::parse_devices(dialect_, *out, dialect_.default_query);
  if (!parsed) {
    firmware_key_.clear();
    return parsed.error();
  }
  api::NodeInventory inv = to_inventory(dialect_.vendor, std::move(*parsed));
  if (dialect_.vendor == api::Vendor::habana) {
    if (inv.driver_version.empty()) inv.driver_version = "unknown";  // Older hl-smi, or N/A.
    apply_sysfs_health(config_.sysfs_root, inv.devices);
    read_firmware(inv);
    read_ports(inv);
  }
  return inv;
}

void SmiInventory::read_firmware(api::NodeInventory& inv) {
  if (inv.devices.empty()) return;
  std::string key = inv.driver_version;
  for (const api::Device& d : inv.devices) key += "|" + d.bus_id + "=" + d.uuid;
  if (key != firmware_key_) {
    auto out = run_tool(dialect_.tool, tool_path_, {"-L"}, runner_, config_);
    firmware_ = out ? smi::parse_hl_smi_firmware(*out) : std::map<std::string, std::string>{};
    firmware_key_ = out ? key : "";  // A failed listing is tried again on the next read.
  }
  for (api::Device& d : inv.devices) {
    std::string bus = d.bus_id;
    for (char& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = firmware_.find(bus);
    d.firmware_version = it == firmware_.end() ? "unknown" : it->second;
  }
}

void SmiInventory::read_ports(api::NodeInventory& inv) {
  if (inv.devices.empty()) return;
  std::string key;
  for (const api::Device& d : inv.devices) key += d.bus_id + "|";
  const bool due = key != ports_key_ || !ports_error_.empty() || ++reads_since_ports_ >= config_.ports_every;
  if (due) {
    ports_.clear();
    ports_error_.clear();
    for (api::Device& d : inv.devices) {
      if (auto s = read_card_ports(d); !s) {
        ports_error_ = "reading ports: " + s.error().message;
        break;
      }
      ports_[d.bus_id] = d;
    }
    ports_key_ = key;
    reads_since_ports_ = 0;
  }
  // Unknown port state is not a reason to stop placing on the node: keep the cards,
  // say why their ports are not known.
  for (api::Device& d : inv.devices) {
    auto it = ports_.find(d.bus_id);
    const bool known = ports_error_.empty() && it != ports_.end();
    d.ports_total = known ? it->second.ports_total : std::nullopt;
    d.ports_up = known ? it->second.ports_up : std::nullopt;
    d.ports_down = known ? it->second.ports_down : std::vector<int>{};
  }
  inv.ports_error = ports_error_;
}

Status SmiInventory::read_card_ports(api::Device& d) {
  if (d.bus_id.empty()) return Error{"card " + std::to_string(d.index) + " has no PCI bus id for hl-smi -n link -i"};
  auto out = run_tool(dialect_.tool, tool_path_, {"-n", "link", "-i", d.bus_id}, runner_, config_);
  if (!out) return out.error();
  auto ports = smi::parse_hl_smi_link(*out);
  if (!ports) return ports.error();
  // The per-card form names no card (or only this one): merge it into this card alone.
  std::vector<api::Device> card = {d};
  if (auto s = smi::merge_ports(*ports, card); !s) return s;
  d = std::move(card[0]);
  return ok_status();
}

std::unique_ptr<InventorySource> make_hl_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::hl_smi_dialect(), config.hl_smi, runner, config);
}

std::unique_ptr<InventorySource> make_nvidia_smi_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<SmiInventory>(smi::nvidia_smi_dialect(), config.nvidia_smi, runner, config);
}

}  // namespace tessel::agent
