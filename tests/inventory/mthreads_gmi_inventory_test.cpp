// The mthreads-gmi inventory end to end: the real runner and the fake mthreads-gmi replaying
// the fixtures (the failure modes every tool shares: tool_contract_test.cpp).
#include "tessel/agent/mthreads_gmi_inventory.hpp"

#include <gtest/gtest.h>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using testing::ScopedEnv;

class MthreadsGmiInventoryTest : public testing::FakeToolTest {
 protected:
  MthreadsGmiInventoryTest() : FakeToolTest(testing::kMthreadsGmi, "mthreads-gmi/s5000-8.json") {}
};

TEST_F(MthreadsGmiInventoryTest, ReadsEightS5000) {
  auto inv = make_mthreads_gmi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::mthreads);
  EXPECT_EQ(inv->driver_version, "3.3.5-server");
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[2].uuid, "00000002-5000-4000-8000-00000000004a");
  EXPECT_EQ(inv->devices[2].bus_id, "00000000:4a:00.0");
  EXPECT_EQ(inv->devices[2].model, "MTT S5000");
  EXPECT_EQ(inv->devices[2].memory_used_mib, 2048);
  EXPECT_EQ(inv->devices[2].power_w, 99);  // "98.50W", rounded half away from zero.
  EXPECT_TRUE(inv->devices[7].healthy);
}

TEST_F(MthreadsGmiInventoryTest, PartialOutputIsReportedWithItsPlace) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "cut.json",
                      "{\"Driver Version\": \"3.3.5-server\", \"GPU\": [{\"Index\": \"0\"}, {\"Ind");
  ScopedEnv f("FAKE_MTHREADS_GMI_FIXTURE", (dir.path() / "cut.json").string());
  EXPECT_EQ(read_error(config()), "mthreads-gmi: not JSON");
  testing::write_file(dir.path() / "noindex.json",
                      "{\"GPU\": [{\"Index\": \"0\"}, {\"Product Name\": \"MTT S5000\"}]}");
  ScopedEnv g("FAKE_MTHREADS_GMI_FIXTURE", (dir.path() / "noindex.json").string());
  EXPECT_EQ(read_error(config()), "mthreads-gmi GPU[1].Index: must be an integer 0..1023");
}

}  // namespace
}  // namespace tessel::agent
