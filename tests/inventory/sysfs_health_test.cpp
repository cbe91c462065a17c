#include "tessel/agent/sysfs_health.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tessel::agent {
namespace {

std::vector<api::Device> cards(int n) {
  std::vector<api::Device> out;
  for (int i = 0; i < n; ++i) {
    api::Device d;
    d.index = i;
    d.module_id = 7 - i;
    d.model = "HL-225";
    out.push_back(d);
  }
  return out;
}

TEST(SysfsHealth, OperationalWithWhitespaceIsHealthyMissingFileToo) {
  testing::TempDir root;
  testing::write_sysfs_status(root.path(), 0, "operational\n");
  testing::write_sysfs_status(root.path(), 1, "  operational \r\n");
  auto devices = cards(3);  // accel2 has no status file.
  apply_sysfs_health(root.path(), devices);
  for (const auto& d : devices) EXPECT_TRUE(d.healthy) << d.index << ": " << d.health_reason;
}

TEST(SysfsHealth, OtherStatusIsUnhealthyWithReason) {
  testing::TempDir root;
  testing::write_sysfs_status(root.path(), 0, "in reset\n");
  testing::write_sysfs_status(root.path(), 1, "needs reset");
  testing::write_sysfs_status(root.path(), 2, "");
  auto devices = cards(3);
  apply_sysfs_health(root.path(), devices);
  EXPECT_FALSE(devices[0].healthy);
  EXPECT_EQ(devices[0].health_reason, "sysfs status \"in reset\"");
  EXPECT_EQ(devices[1].health_reason, "sysfs status \"needs reset\"");
  EXPECT_FALSE(devices[2].healthy);
  EXPECT_EQ(devices[2].health_reason, "sysfs status \"\"");
}

TEST(SysfsHealth, ByIndexNotModuleId) {
  testing::TempDir root;
  testing::write_sysfs_status(root.path(), 1, "disabled");
  auto devices = cards(8);
  apply_sysfs_health(root.path(), devices);
  for (const auto& d : devices) EXPECT_EQ(d.healthy, d.index != 1) << d.index;
}

TEST(SysfsHealth, MissingRootChangesNothing) {
  auto devices = cards(2);
  apply_sysfs_health("/nonexistent/tessel-sysfs", devices);
  EXPECT_TRUE(devices[0].healthy);
  EXPECT_TRUE(devices[1].healthy);
}

}  // namespace
}  // namespace tessel::agent
