// libFuzzer target: the rocm-smi JSON parser must return a value or an error for
// any input, never crash, and what it returns must serialise and read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/rocm_smi_parse.hpp"
#include "inventory_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::amd::parse_rocm_smi(text);
  if (r.ok()) tessel::fuzz::check_round_trip(*r, tessel::api::Vendor::amd);
  return 0;
}
