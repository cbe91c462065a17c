// libFuzzer target: the xpu-smi dump CSV parser must return readings or an error for
// any input, never crash; what it returns must pass check_telemetry() (inventory_check.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessel/agent/xpu_smi_dump.hpp"
#include "inventory_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::intel::parse_xpu_smi_dump(text);
  if (r.ok()) tessel::fuzz::check_telemetry(*r, tessel::api::Vendor::intel);
  return 0;
}
