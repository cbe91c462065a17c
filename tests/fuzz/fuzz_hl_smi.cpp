// libFuzzer target: hl-smi's outputs. The same input goes to the -Q CSV parser, the
// port query parser (-n link) and the firmware listing parser (-L): each must return
// a value or an error for any input, never crash; what they accept must serialise,
// and the port state the port parser accepts must read back from the wire format.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/hl_smi_cards.hpp"
#include "tessel/agent/smi_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace smi = tessel::agent::smi;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = smi::parse_hl_smi(text);
  auto ports = smi::parse_hl_smi_link(text);
  auto firmware = smi::parse_hl_smi_firmware(text);
  if (r.ok()) {
    tessel::api::NodeInventory inv;
    inv.driver_version = r->driver_version;
    inv.devices = r->devices;
    if (ports.ok()) (void)smi::merge_ports(*ports, inv.devices);
    for (auto& d : inv.devices)
      if (auto it = firmware.find(d.bus_id); it != firmware.end()) d.firmware_version = it->second;
    (void)tessel::api::inventory_from_json(tessel::api::to_json(inv));
  }
  if (ports.ok()) {  // Ports on a node of one nameless card must serialise too.
    tessel::api::NodeInventory one;
    one.devices.resize(1);
    one.devices[0].model = "HL-225";
    if (smi::merge_ports(*ports, one.devices).ok() && !tessel::api::inventory_from_json(tessel::api::to_json(one)).ok())
      __builtin_trap();
  }
  return 0;
}
