// The xpu-smi inventory end to end: the real runner and the fake xpu-smi replaying
// the fixtures (the failure modes every tool shares: tool_contract_test.cpp).
#include "tessel/agent/xpu_smi_inventory.hpp"

#include <gtest/gtest.h>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class XpuSmiInventoryTest : public testing::FakeToolTest {
 protected:
  XpuSmiInventoryTest() : FakeToolTest(testing::kXpuSmi, "xpu-smi/max1550-4-discovery.json") {}
};

TEST_F(XpuSmiInventoryTest, ReadsFourMax1550) {
  auto inv = make_xpu_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::intel);
  ASSERT_EQ(inv->devices.size(), 4u);
  EXPECT_EQ(inv->devices[2].uuid, "00000000-0000-006c-0000-002f0bd58086");
  EXPECT_EQ(inv->devices[2].bus_id, "0000:6c:00.0");
  EXPECT_EQ(inv->devices[2].model, "Intel(R) Data Center GPU Max 1550");
}

TEST_F(XpuSmiInventoryTest, ReadsTelemetryWithOneDump) {
  ScopedEnv d("FAKE_XPU_SMI_DUMP_FIXTURE", testing::fixture_path("xpu-smi/max1550-4-dump.csv"));
  auto inv = make_xpu_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 4u);
  EXPECT_EQ(inv->devices[1].utilization_pct, 91);
  EXPECT_EQ(inv->devices[1].power_w, 438);
  EXPECT_EQ(inv->devices[1].temperature_c, 63);
  EXPECT_EQ(inv->devices[1].memory_used_mib, 98310);
  EXPECT_FALSE(inv->devices[2].temperature_c.has_value());  // N/A in the dump.
  EXPECT_EQ(inv->devices[2].bus_id, "0000:6c:00.0");        // What discovery gave stays.
}

// The readings are extra: however the dump fails, the cards are all there, without
// readings. With FAKE_XPU_SMI_DUMP_FIXTURE unset the fake fails `dump`.
TEST_F(XpuSmiInventoryTest, DumpFailureLeavesCardsWithoutTelemetry) {
  auto expect_no_telemetry = [&](const InventoryConfig& c, const std::string& what) {
    auto inv = make_xpu_smi_inventory(runner_, c)->read();
    ASSERT_TRUE(inv.ok()) << what << ": " << inv.error().message;
    ASSERT_EQ(inv->devices.size(), 4u) << what;
    for (const api::Device& d : inv->devices)
      EXPECT_FALSE(d.utilization_pct || d.temperature_c || d.power_w || d.memory_used_mib) << what;
  };
  expect_no_telemetry(config(), "no dump fixture");
  ScopedEnv f("FAKE_XPU_SMI_DUMP_FIXTURE", testing::fixture_path("xpu-smi/max1550-4-dump.csv"));
  for (const char* mode : {"fail", "garbage", "crash"}) {
    ScopedEnv m("FAKE_XPU_SMI_DUMP_MODE", mode);
    expect_no_telemetry(config(), mode);
  }
  ScopedEnv m("FAKE_XPU_SMI_DUMP_MODE", "hang");
  InventoryConfig c = config();
  c.timeout = 1s;
  expect_no_telemetry(c, "hang");
}

TEST_F(XpuSmiInventoryTest, LevelZeroErrorIsReported) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "err.json", "{\"error\": \"Level Zero Initialization Error\"}\n");
  ScopedEnv f("FAKE_XPU_SMI_FIXTURE", (dir.path() / "err.json").string());
  EXPECT_EQ(read_error(config()), "xpu-smi: Level Zero Initialization Error");
}

}  // namespace
}  // namespace tessel::agent
