// The amd-smi inventory end to end: the real runner and the fake amd-smi replaying
// the fixtures (the failure modes every tool shares: tool_contract_test.cpp).
#include "tessel/agent/amd_smi_inventory.hpp"

#include <gtest/gtest.h>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class AmdSmiInventoryTest : public testing::FakeToolTest {
 protected:
  AmdSmiInventoryTest() : FakeToolTest(testing::kAmdSmi, "amd-smi/mi300x-8-static-gpu-data.json") {}
};

TEST_F(AmdSmiInventoryTest, ReadsEightMi300x) {
  auto inv = make_amd_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::amd);
  EXPECT_EQ(inv->driver_version, "6.8.5");
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[2].uuid, "GPU-1b8ae5f41e1bd1cc");
  EXPECT_EQ(inv->devices[2].bus_id, "0000:38:00.0");
}

TEST_F(AmdSmiInventoryTest, ReadsOlderListShape) {
  ScopedEnv f("FAKE_AMD_SMI_FIXTURE", testing::fixture_path("amd-smi/mi250x-2-static-list.json"));
  auto inv = make_amd_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 2u);
  EXPECT_EQ(inv->devices[1].uuid, "GPU-6be2ee3b2b314cfc");
}

TEST_F(AmdSmiInventoryTest, ReadsTelemetryWithMetric) {
  ScopedEnv m("FAKE_AMD_SMI_METRIC_FIXTURE", testing::fixture_path("amd-smi/mi300x-8-metric-gpu-data.json"));
  auto inv = make_amd_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 8u);
  const api::Device& d = inv->devices[0];
  EXPECT_EQ(d.utilization_pct, 98);
  EXPECT_EQ(d.temperature_c, 71);
  EXPECT_EQ(d.power_w, 701);
  EXPECT_EQ(d.memory_used_mib, 183042);
  EXPECT_EQ(d.uuid, "GPU-7ef570db1b346018");  // What static gave stays.
  EXPECT_FALSE(inv->devices[5].power_w.has_value());
}

// The readings are extra: however the metric call fails, the cards are all there,
// without readings. With FAKE_AMD_SMI_METRIC_FIXTURE unset the fake fails `metric`.
TEST_F(AmdSmiInventoryTest, MetricFailureLeavesCardsWithoutTelemetry) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "garbage.json", "{\"gpu_data\": 7}");
  auto expect_no_telemetry = [&](const InventoryConfig& c, const std::string& what) {
    auto inv = make_amd_smi_inventory(runner_, c)->read();
    ASSERT_TRUE(inv.ok()) << what << ": " << inv.error().message;
    ASSERT_EQ(inv->devices.size(), 8u) << what;
    for (const api::Device& d : inv->devices) {
      EXPECT_FALSE(d.utilization_pct || d.temperature_c || d.power_w || d.memory_used_mib) << what;
      EXPECT_EQ(d.memory_total_mib, 196592) << what;
    }
  };
  expect_no_telemetry(config(), "no metric fixture");
  ScopedEnv f("FAKE_AMD_SMI_METRIC_FIXTURE", testing::fixture_path("amd-smi/mi300x-8-metric-gpu-data.json"));
  for (const char* mode : {"fail", "garbage", "crash"}) {
    ScopedEnv m("FAKE_AMD_SMI_METRIC_MODE", mode);
    expect_no_telemetry(config(), mode);
  }
  {
    ScopedEnv m("FAKE_AMD_SMI_METRIC_MODE", "hang");
    InventoryConfig c = config();
    c.timeout = 1s;
    expect_no_telemetry(c, "hang");
  }
  ScopedEnv g("FAKE_AMD_SMI_METRIC_FIXTURE", (dir.path() / "garbage.json").string());
  expect_no_telemetry(config(), "unparsable metric output");
}

}  // namespace
}  // namespace tessel::agent
