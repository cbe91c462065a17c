// libFuzzer target: the neuron-ls JSON parser must return a value or an error for any
// input, never crash, and what it returns must serialise and read back unchanged (the
// core count included: NEURON_RT_VISIBLE_CORES is computed from it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/agent/neuron_ls_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::agent::neuron::parse_neuron_ls(text);
  if (r.ok()) {
    tessel::api::NodeInventory inv{tessel::api::Vendor::neuron, r->driver_version, r->devices};
    auto back = tessel::api::inventory_from_json(tessel::api::to_json(inv));
    if (!back.ok() || back->devices != inv.devices) std::abort();
  }
  return 0;
}
