// libFuzzer target: api::inventory_from_json on arbitrary JSON text. Anything it
// accepts must serialise and parse back to the same JSON (to_json normalises, e.g.
// drops health_reason of a healthy device, so compare after one round).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tessel/api/inventory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto inv = tessel::api::inventory_from_json(j);
  if (!inv.ok()) return 0;
  auto again = tessel::api::inventory_from_json(tessel::api::to_json(*inv));
  if (!again.ok() || tessel::api::to_json(*again) != tessel::api::to_json(*inv)) std::abort();
  return 0;
}
