// libFuzzer target: the hl-smi CSV parser must return a value or an error for any
// input, never crash, and whatever it accepts must survive the JSON wire format.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/smi_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::smi::parse_hl_smi(text);
  if (r.ok()) {
    tessel::api::NodeInventory inv{tessel::api::Vendor::habana, r->driver_version, r->devices};
    (void)tessel::api::to_json(inv).dump();
  }
  return 0;
}
