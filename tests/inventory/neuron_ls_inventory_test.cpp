// The neuron-ls inventory end to end: the real runner and the fake neuron-ls replaying
// the fixtures (the failure modes every tool shares: tool_contract_test.cpp).
#include "tessel/agent/neuron_ls_inventory.hpp"

#include <gtest/gtest.h>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using testing::ScopedEnv;

class NeuronLsInventoryTest : public testing::FakeToolTest {
 protected:
  NeuronLsInventoryTest() : FakeToolTest(testing::kNeuronLs, "neuron-ls/trn2-48xlarge-16.json") {}
};

TEST_F(NeuronLsInventoryTest, ReadsSixteenTrn2Devices) {
  auto inv = make_neuron_ls_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::neuron);
  ASSERT_EQ(inv->devices.size(), 16u);
  EXPECT_EQ(inv->devices[5].uuid, "NEURON-58:00.0");
  EXPECT_EQ(inv->devices[5].cores, 4);
}

TEST_F(NeuronLsInventoryTest, ReadsSingleDeviceHost) {
  ScopedEnv f("FAKE_NEURON_LS_FIXTURE", testing::fixture_path("neuron-ls/trn2-3xlarge-1.json"));
  auto inv = make_neuron_ls_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 1u);
  EXPECT_EQ(inv->devices[0].model, "trn2");
}

}  // namespace
}  // namespace tessel::agent
