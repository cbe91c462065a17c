#include "tessel/agent/tpu_inventory.hpp"

#include <fstream>

namespace tessel::agent {

namespace {

namespace fs = std::filesystem;

// The first bytes of a small sysfs attribute file; "" when it cannot be read.
std::string read_attribute(const fs::path& file) {
  std::ifstream in(file);
  std::string text(16, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

class TpuInventory final : public InventorySource {
 public:
  explicit TpuInventory(InventoryConfig config) : config_(std::move(config)) {}

  Result<api::NodeInventory> read() override {
    auto functions = scan_pci(config_.sysfs_root);
    if (!functions) return functions.error();
    auto chips = tpu::tpu_chips(*functions);
    if (!chips) return chips.error();
    if (chips->devices.empty())
      return Error{"no Google TPU chip (PCI vendor 0x1ae0) under " + (config_.sysfs_root / "bus/pci/devices").string()};
    api::NodeInventory inv;
    inv.vendor = api::Vendor::tpu;
    inv.devices = std::move(chips->devices);
    return inv;
  }

 private:
  const InventoryConfig config_;
};

}  // namespace

Result<std::vector<tpu::PciFunction>> scan_pci(const fs::path& sysfs_root) {
  const fs::path dir = sysfs_root / "bus/pci/devices";
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return Error{"TPU: cannot list " + dir.string() + ": " + ec.message()};
  std::vector<tpu::PciFunction> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Error{"TPU: cannot list " + dir.string() + ": " + ec.message()};
    tpu::PciFunction f;
    f.address = it->path().filename().string();
    f.vendor = read_attribute(it->path() / "vendor");
    f.device = read_attribute(it->path() / "device");
    if (!f.vendor.empty() && !f.device.empty()) out.push_back(std::move(f));
  }
  return out;
}

bool has_tpu(const fs::path& sysfs_root) {
  auto functions = scan_pci(sysfs_root);
  if (!functions) return false;
  auto chips = tpu::tpu_chips(*functions);
  return chips && !chips->devices.empty();
}

std::unique_ptr<InventorySource> make_tpu_inventory(const InventoryConfig& config) {
  return std::make_unique<TpuInventory>(config);
}

}  // namespace tessel::agent
