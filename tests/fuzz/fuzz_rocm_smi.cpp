// libFuzzer target: the rocm-smi JSON parser must return a value or an error for
// any input, never crash, and what it returns must serialise and read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/rocm_smi_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::amd::parse_rocm_smi(text);
  if (r.ok()) {
    tessel::api::NodeInventory inv{tessel::api::Vendor::amd, r->driver_version, r->devices};
    if (!tessel::api::inventory_from_json(tessel::api::to_json(inv)).ok()) std::abort();
  }
  return 0;
}
