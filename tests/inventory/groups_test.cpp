// Valid groups as the inventory JSON reports them (api::to_json), for nodes with
// missing or unhealthy cards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/sysfs_health.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using nlohmann::json;
using testing::fixture;

api::NodeInventory habana_inventory(const std::string& file) {
  auto p = smi::parse_devices(smi::hl_smi_dialect(), fixture(file), {});
  EXPECT_TRUE(p.ok()) << p.error().message;
  api::NodeInventory inv;
  inv.vendor = api::Vendor::habana;
  inv.driver_version = p->driver_version;
  inv.devices = p->devices;
  return inv;
}

TEST(InventoryGroups, FullEightCardNode) {
  json j = api::to_json(habana_inventory("hl-smi/gaudi2-hl225-8.csv"));
  EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3],[4,5],[6,7]]"));
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3],[4,5,6,7]]"));
  EXPECT_EQ(j["groups"]["8"], json::parse("[[0,1,2,3,4,5,6,7]]"));
}

TEST(InventoryGroups, FourCardNodeHasNoEight) {
  // Indices 0..3 carry module ids 2,0,3,1: groups are by module id.
  json j = api::to_json(habana_inventory("hl-smi/gaudi2-4card.csv"));
  EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3]]"));
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3]]"));
  EXPECT_FALSE(j["groups"].contains("8"));
  EXPECT_EQ(j["devices"].size(), 4u);
}

TEST(InventoryGroups, UnhealthyCardBreaksItsGroups) {
  testing::TempDir sysfs;
  api::NodeInventory inv = habana_inventory("hl-smi/gaudi2-hl225-8.csv");
  // Index 3 carries module 6 in this fixture.
  testing::write_sysfs_status(sysfs.path(), 3, "in reset\n");
  apply_sysfs_health(sysfs.path(), inv.devices);
  json j = api::to_json(inv);
  EXPECT_EQ(j["devices"][3]["healthy"], false);
  EXPECT_EQ(j["devices"][3]["health_reason"], "sysfs status \"in reset\"");
  EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3],[4,5]]"));
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3]]"));
  EXPECT_FALSE(j["groups"].contains("8"));
}

TEST(InventoryGroups, NotAvailableTelemetryKeepsCardsInGroups) {
  json j = api::to_json(habana_inventory("hl-smi/gaudi2-na-telemetry.csv"));
  EXPECT_EQ(j["devices"][1]["power_w"], nullptr);
  EXPECT_EQ(j["devices"][1]["healthy"], true);
  EXPECT_EQ(j["groups"]["8"], json::parse("[[0,1,2,3,4,5,6,7]]"));
}

TEST(InventoryGroups, NvidiaIsAll) {
  auto p = smi::parse_devices(smi::nvidia_smi_dialect(), fixture("nvidia-smi/h100-8.csv"), {});
  ASSERT_TRUE(p.ok());
  api::NodeInventory inv{api::Vendor::nvidia, p->driver_version, p->devices};
  EXPECT_EQ(api::to_json(inv)["groups"], json::parse(R"({"all": true})"));
}

TEST(InventoryGroups, JsonRoundTrip) {
  api::NodeInventory inv = habana_inventory("hl-smi/gaudi2-na-telemetry.csv");
  auto back = api::inventory_from_json(api::to_json(inv));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, inv);
}

}  // namespace
}  // namespace tessel::agent
