// libFuzzer target: the xpu-smi dump CSV parser must return readings or an error for
// any input, never crash; readings must be unique by index, and devices carrying them
// must serialise and read back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/agent/xpu_smi_dump.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::intel::parse_xpu_smi_dump(text);
  if (!r.ok()) return 0;
  std::set<int> indices;
  std::vector<tessel::api::Device> devices;
  for (const auto& t : *r) {
    if (!indices.insert(t.index).second) std::abort();
    tessel::api::Device d;
    d.index = d.module_id = t.index;
    devices.push_back(d);
  }
  tessel::agent::smi::merge_telemetry(*r, devices);
  tessel::api::NodeInventory inv{tessel::api::Vendor::intel, "", devices};
  if (!tessel::api::inventory_from_json(tessel::api::to_json(inv)).ok()) std::abort();
  return 0;
}
