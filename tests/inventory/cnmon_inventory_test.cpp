// The cnmon inventory end to end: the real runner and the fake cnmon, which writes the
// fixture into cnmon_info.json in its working directory as cnmon does; its failure modes
// and that no file or directory is left behind (the rest: tool_contract_test.cpp).
#include "tessel/agent/cnmon_inventory.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class CnmonInventoryTest : public testing::FakeToolTest {
 protected:
  CnmonInventoryTest() : FakeToolTest(testing::kCnmon, "cnmon/mlu370-x8-8.json") {}
  // What is left in the temp directory the inventory used.
  size_t leftovers() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp_.path())) ++n;
    return n;
  }

  testing::TempDir tmp_;
  testing::TempDir files_;  // Fixtures a test writes, made before TMPDIR points at tmp_.
  ScopedEnv tmpdir_{"TMPDIR", tmp_.path().string()};
};

TEST_F(CnmonInventoryTest, ReadsEightMlu370FromTheFileAndCleansUp) {
  auto inv = make_cnmon_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::cambricon);
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[5].bus_id, "0000:89:00.0");
  EXPECT_EQ(inv->devices[5].model, "MLU370-X8");
  EXPECT_EQ(leftovers(), 0u);
}

TEST_F(CnmonInventoryTest, FailureModesGiveClearMessagesAndCleanUp) {
  {
    ScopedEnv m("FAKE_CNMON_MODE", "fail");
    EXPECT_EQ(read_error(config()),
              "cnmon exited 3: cnmon: failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv m("FAKE_CNMON_MODE", "garbage");  // Prints junk, writes no file.
    EXPECT_EQ(read_error(config()), "cnmon wrote no cnmon_info.json");
  }
  {
    ScopedEnv m("FAKE_CNMON_MODE", "crash");
    EXPECT_EQ(read_error(config()).rfind("cnmon killed by signal 11 (SIGSEGV)", 0), 0u) << read_error(config());
  }
  EXPECT_EQ(leftovers(), 0u);
}

TEST_F(CnmonInventoryTest, EmptyOrCutFileIsAnError) {
  testing::write_file(files_.path() / "empty.json", "");
  {
    ScopedEnv f("FAKE_CNMON_FIXTURE", (files_.path() / "empty.json").string());
    EXPECT_EQ(read_error(config()), "cnmon: not JSON");
  }
  testing::write_file(files_.path() / "cut.json", R"({"CnmonInfo": [{"CardNum": 0}, {"Card)");
  ScopedEnv f("FAKE_CNMON_FIXTURE", (files_.path() / "cut.json").string());
  EXPECT_EQ(read_error(config()), "cnmon: not JSON");
  EXPECT_EQ(leftovers(), 0u);
}

TEST_F(CnmonInventoryTest, HungToolTimesOutAndCleansUp) {
  ScopedEnv m("FAKE_CNMON_MODE", "hang");
  InventoryConfig c = config();
  c.timeout = 300ms;
  EXPECT_EQ(read_error(c), "cnmon timed out after 0.3 s");
  EXPECT_EQ(leftovers(), 0u);
}

}  // namespace
}  // namespace tessel::agent
