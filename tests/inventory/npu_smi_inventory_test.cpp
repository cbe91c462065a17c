// The npu-smi inventory end to end: the real runner and the fake npu-smi replaying
// the fixtures (the failure modes every tool shares: tool_contract_test.cpp).
#include "tessel/agent/npu_smi_inventory.hpp"

#include <gtest/gtest.h>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using testing::ScopedEnv;

class NpuSmiInventoryTest : public testing::FakeToolTest {
 protected:
  NpuSmiInventoryTest() : FakeToolTest(testing::kNpuSmi, "npu-smi/atlas800-9010-910a-8-info.txt") {}
};

TEST_F(NpuSmiInventoryTest, ReadsEight910a) {
  auto inv = make_npu_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::ascend);
  EXPECT_EQ(inv->driver_version, "24.1.RC2");
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[2].uuid, "NPU-0000:41:00.0");
  EXPECT_EQ(inv->devices[2].bus_id, "0000:41:00.0");
}

TEST_F(NpuSmiInventoryTest, ReadsMultiChipCard) {
  ScopedEnv f("FAKE_NPU_SMI_FIXTURE", testing::fixture_path("npu-smi/atlas800-3000-310-4chip-info.txt"));
  auto inv = make_npu_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 4u);
  EXPECT_EQ(inv->devices[0].index, 3);
}

}  // namespace
}  // namespace tessel::agent
