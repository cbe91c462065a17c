// The neuron-ls inventory end to end: the real runner and the fake neuron-ls replaying
// the fixtures, including its failure modes, a missing tool and vendor detection.
#include "tessel/agent/neuron_ls_inventory.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class NeuronLsInventoryTest : public ::testing::Test {
 protected:
  InventoryConfig config() const {
    InventoryConfig c;
    c.neuron_ls = FAKE_NEURON_LS_PATH;
    c.timeout = 10s;
    c.path_env = "";
    return c;
  }
  std::string read_error(const InventoryConfig& c) {
    auto r = make_neuron_ls_inventory(runner_, c)->read();
    return r.ok() ? std::string("(ok)") : r.error().message;
  }

  ProcessRunner runner_;
  ScopedEnv fixture_{"FAKE_NEURON_LS_FIXTURE", testing::fixture_path("neuron-ls/trn2-48xlarge-16.json")};
  ScopedEnv mode_{"FAKE_NEURON_LS_MODE", "normal"};
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

TEST_F(NeuronLsInventoryTest, FailureModesGiveClearMessages) {
  {
    ScopedEnv m("FAKE_NEURON_LS_MODE", "fail");
    EXPECT_EQ(read_error(config()),
              "neuron-ls exited 3: neuron-ls: failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv m("FAKE_NEURON_LS_MODE", "garbage");
    EXPECT_EQ(read_error(config()), "neuron-ls: not JSON");
  }
  {
    ScopedEnv m("FAKE_NEURON_LS_MODE", "crash");
    EXPECT_EQ(read_error(config()).rfind("neuron-ls killed by signal 11 (SIGSEGV)", 0), 0u) << read_error(config());
  }
}

TEST_F(NeuronLsInventoryTest, EmptyOutputIsAnError) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "empty.txt", "");
  ScopedEnv f("FAKE_NEURON_LS_FIXTURE", (dir.path() / "empty.txt").string());
  EXPECT_EQ(read_error(config()), "neuron-ls: not JSON");
}

TEST_F(NeuronLsInventoryTest, HungToolTimesOut) {
  ScopedEnv m("FAKE_NEURON_LS_MODE", "hang");
  InventoryConfig c = config();
  c.timeout = 300ms;
  EXPECT_EQ(read_error(c), "neuron-ls timed out after 0.3 s");
}

TEST_F(NeuronLsInventoryTest, MissingTool) {
  InventoryConfig c = config();
  c.neuron_ls = "/nonexistent/neuron-ls";
  EXPECT_EQ(read_error(c), "neuron-ls not found at /nonexistent/neuron-ls");
  c.neuron_ls = "neuron-ls";
  c.path_env = "/nonexistent";
  EXPECT_EQ(read_error(c), "neuron-ls not found in PATH");
}

TEST_F(NeuronLsInventoryTest, AutoFindsNeuronLsInPath) {
  InventoryConfig c = config();
  c.neuron_ls = "neuron-ls";
  c.path_env = "/nonexistent:" + std::filesystem::path(FAKE_NEURON_LS_PATH).parent_path().string();
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::neuron);
  auto source = make_inventory_source("auto", runner_, c);
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto inv = (*source)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::neuron);
  auto by_name = make_inventory_source("neuron", runner_, c);
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ((*by_name)->read()->devices.size(), 16u);
}

}  // namespace
}  // namespace tessel::agent
