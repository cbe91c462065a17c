// Google TPU chips from a PCI scan: the pure chip table (tpu_pci.hpp) and the scan of a
// fake sysfs tree (--sysfs-root), as a v5e host of 8 chips and a v4 host of 4 shows it.
#include "tessel/agent/tpu_inventory.hpp"

#include <gtest/gtest.h>

#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

namespace fs = std::filesystem;
using tpu::PciFunction;

// <root>/bus/pci/devices/<address>/{vendor,device}, as sysfs writes them.
void add_function(const fs::path& root, const std::string& address, const std::string& vendor,
                  const std::string& device) {
  const fs::path dir = root / "bus/pci/devices" / address;
  testing::write_file(dir / "vendor", vendor + "\n");
  testing::write_file(dir / "device", device + "\n");
}

// A v5e host (ct5lp-hightpu-8t): 8 chips, plus the gVNIC (also vendor 0x1ae0) and an
// Intel bridge that are not TPUs. Addresses are listed out of order on purpose.
void v5e_host(const fs::path& root) {
  for (const char* a : {"0000:00:0b.0", "0000:00:04.0", "0000:00:05.0", "0000:00:06.0", "0000:00:07.0", "0000:00:08.0",
                        "0000:00:09.0", "0000:00:0a.0"})
    add_function(root, a, "0x1ae0", "0x0063");
  add_function(root, "0000:00:03.0", "0x1ae0", "0x0042");  // gVNIC.
  add_function(root, "0000:00:00.0", "0x8086", "0x1237");
}

InventoryConfig config(const fs::path& root) {
  InventoryConfig c;
  c.sysfs_root = root;
  c.path_env = "/nonexistent";
  return c;
}

TEST(TpuPci, ChipTableAndOrder) {
  auto r = tpu::tpu_chips({{"0000:00:05.0", "0x1ae0\n", "0x005e\n"},
                           {"0000:00:04.0", "0x1AE0", "0x005E"},
                           {"0000:00:06.0", "0x1ae0", "0x0042"},    // gVNIC.
                           {"0000:00:07.0", "0x10de", "0x005e"},    // Not Google.
                           {"0000:00:04.0", "0x1ae0", "0x005e"}});  // Listed twice: once.
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].bus_id, "0000:00:04.0");
  EXPECT_EQ(r->devices[0].uuid, "TPU-0000:00:04.0");
  EXPECT_EQ(r->devices[0].model, "TPU v4");
  EXPECT_EQ(r->devices[0].memory_total_mib, 32 * 1024);
  EXPECT_EQ(r->devices[1].index, 1);
  EXPECT_EQ(r->devices[1].module_id, 1);
  for (const char* bad : {"", "1ae0", "0x", "0x1ae0x", "0x11ae0", "junk"})
    EXPECT_TRUE(tpu::tpu_chips({{"0000:00:04.0", bad, "0x0063"}})->devices.empty()) << bad;
  EXPECT_TRUE(tpu::tpu_chips({{"bad address", "0x1ae0", "0x0063"}})->devices.empty());
  std::vector<PciFunction> many;
  for (int i = 0; i < 65; ++i) many.push_back({"0000:00:" + std::to_string(100 + i) + ".0", "0x1ae0", "0x006f"});
  EXPECT_EQ(tpu::tpu_chips(many).error().message, "TPU: more than 64 chips");
}

TEST(TpuInventory, EightV5eChipsFromAFakeSysfs) {
  testing::TempDir root;
  v5e_host(root.path());
  auto inv = make_tpu_inventory(config(root.path()))->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::tpu);
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[0].bus_id, "0000:00:04.0");
  EXPECT_EQ(inv->devices[7].bus_id, "0000:00:0b.0");
  EXPECT_EQ(inv->devices[7].index, 7);
  EXPECT_EQ(inv->devices[7].model, "TPU v5e");
  EXPECT_TRUE(inv->devices[7].healthy);
}

TEST(TpuInventory, NoChipOrNoSysfsIsAnError) {
  testing::TempDir root;
  add_function(root.path(), "0000:00:03.0", "0x1ae0", "0x0042");
  auto none = make_tpu_inventory(config(root.path()))->read();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "no Google TPU chip (PCI vendor 0x1ae0) under " + (root.path() / "bus/pci/devices").string());
  auto missing = make_tpu_inventory(config(root.path() / "nowhere"))->read();
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "TPU: cannot list " + (root.path() / "nowhere/bus/pci/devices").string() + ": No such file or directory");
  // A function whose files are unreadable or half written is skipped, not fatal.
  testing::write_file(root.path() / "bus/pci/devices/0000:00:04.0/vendor", "0x1ae0\n");
  EXPECT_FALSE(make_tpu_inventory(config(root.path()))->read().ok());
}

TEST(TpuInventory, AutoFindsTpuChipsAfterTheTools) {
  testing::TempDir root;
  InventoryConfig c = config(root.path());
  EXPECT_FALSE(detect_vendor(c).ok());
  v5e_host(root.path());
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::tpu);
  ProcessRunner runner;
  auto source = make_inventory_source("auto", runner, c);
  ASSERT_TRUE(source.ok()) << source.error().message;
  EXPECT_EQ((*source)->read()->devices.size(), 8u);
  auto by_name = make_inventory_source("tpu", runner, c);
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ((*by_name)->read()->devices.size(), 8u);
}

}  // namespace
}  // namespace tessel::agent
