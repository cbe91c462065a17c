// libFuzzer target: the TPU chip table (tpu_pci.hpp) must return a value or an error for
// any PCI functions, never crash, and what it returns must serialise and read back. The
// input is one function per line: "<address> <vendor file> <device file>".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tessel/agent/tpu_pci.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<tessel::agent::tpu::PciFunction> functions;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    tessel::agent::tpu::PciFunction f;
    fields >> f.address >> f.vendor >> f.device;
    functions.push_back(std::move(f));
  }
  auto r = tessel::agent::tpu::tpu_chips(functions);
  if (r.ok()) {
    tessel::api::NodeInventory inv{tessel::api::Vendor::tpu, r->driver_version, r->devices};
    if (!tessel::api::inventory_from_json(tessel::api::to_json(inv)).ok()) std::abort();
  }
  return 0;
}
