// libFuzzer target: the nvidia-smi CSV parser must return a value or an error for any
// input, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/smi_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::smi::parse_nvidia_smi(text);
  if (r.ok()) {
    tessel::api::NodeInventory inv{tessel::api::Vendor::nvidia, r->driver_version, r->devices};
    (void)tessel::api::to_json(inv).dump();
  }
  return 0;
}
