// The npu-smi inventory end to end: the real runner and the fake npu-smi replaying
// the fixtures, including its failure modes, a missing tool and vendor detection.
#include "tessel/agent/npu_smi_inventory.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class NpuSmiInventoryTest : public ::testing::Test {
 protected:
  InventoryConfig config() const {
    InventoryConfig c;
    c.npu_smi = FAKE_NPU_SMI_PATH;
    c.timeout = 10s;
    c.path_env = "";
    return c;
  }
  std::string read_error(const InventoryConfig& c) {
    auto r = make_npu_smi_inventory(runner_, c)->read();
    return r.ok() ? std::string("(ok)") : r.error().message;
  }

  ProcessRunner runner_;
  ScopedEnv fixture_{"FAKE_NPU_SMI_FIXTURE", testing::fixture_path("npu-smi/atlas800-9010-910a-8-info.txt")};
  ScopedEnv mode_{"FAKE_NPU_SMI_MODE", "normal"};
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

TEST_F(NpuSmiInventoryTest, FailureModesGiveClearMessages) {
  {
    ScopedEnv m("FAKE_NPU_SMI_MODE", "fail");
    EXPECT_EQ(read_error(config()),
              "npu-smi exited 3: npu-smi: failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv m("FAKE_NPU_SMI_MODE", "garbage");
    EXPECT_EQ(read_error(config()), "npu-smi line 2: not printable ASCII");
  }
  {
    ScopedEnv m("FAKE_NPU_SMI_MODE", "crash");
    EXPECT_EQ(read_error(config()).rfind("npu-smi killed by signal 11 (SIGSEGV)", 0), 0u) << read_error(config());
  }
}

TEST_F(NpuSmiInventoryTest, EmptyOutputIsAnError) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "empty.txt", "");
  ScopedEnv f("FAKE_NPU_SMI_FIXTURE", (dir.path() / "empty.txt").string());
  EXPECT_EQ(read_error(config()), "npu-smi: no device table");
}

TEST_F(NpuSmiInventoryTest, HungToolTimesOut) {
  ScopedEnv m("FAKE_NPU_SMI_MODE", "hang");
  InventoryConfig c = config();
  c.timeout = 300ms;
  EXPECT_EQ(read_error(c), "npu-smi timed out after 0.3 s");
}

TEST_F(NpuSmiInventoryTest, MissingTool) {
  InventoryConfig c = config();
  c.npu_smi = "/nonexistent/npu-smi";
  EXPECT_EQ(read_error(c), "npu-smi not found at /nonexistent/npu-smi");
  c.npu_smi = "npu-smi";
  c.path_env = "/nonexistent";
  EXPECT_EQ(read_error(c), "npu-smi not found in PATH");
}

TEST_F(NpuSmiInventoryTest, AutoFindsNpuSmiInPath) {
  InventoryConfig c = config();
  c.npu_smi = "npu-smi";
  c.path_env = "/nonexistent:" + std::filesystem::path(FAKE_NPU_SMI_PATH).parent_path().string();
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::ascend);
  auto source = make_inventory_source("auto", runner_, c);
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto inv = (*source)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::ascend);
  auto by_name = make_inventory_source("ascend", runner_, c);
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ((*by_name)->read()->devices.size(), 8u);
}

}  // namespace
}  // namespace tessel::agent
