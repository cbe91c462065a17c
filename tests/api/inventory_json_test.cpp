#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/inventory.hpp"

using namespace tessel::api;
using nlohmann::json;

namespace {
NodeInventory sample() {
  NodeInventory inv;
  inv.vendor = Vendor::habana;
  inv.driver_version = "1.18.0-ee698fb";
  const int modules[8] = {1, 3, 2, 6, 0, 7, 5, 4};
  for (int i = 0; i < 8; ++i) {
    Device d;
    d.index = i;
    d.module_id = modules[i];
    d.model = "HL-225";
    d.memory_total_mib = 98304;
    d.temperature_c = 30 + i;
    inv.devices.push_back(d);
  }
  inv.devices[3].healthy = false;  // Module 6.
  inv.devices[3].health_reason = "sysfs status \"in reset\"";
  return inv;
}
}  // namespace

TEST(InventoryJson, RoundTripAndGroups) {
  auto inv = sample();
  json j = to_json(inv);
  EXPECT_EQ(j["vendor"], "habana");
  EXPECT_TRUE(j["devices"][0]["power_w"].is_null());
  EXPECT_EQ(j["devices"][3]["health_reason"], "sysfs status \"in reset\"");
  EXPECT_FALSE(j["devices"][0].contains("health_reason"));
  EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3],[4,5]]"));
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3]]"));
  EXPECT_FALSE(j["groups"].contains("8"));
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, inv);
}

TEST(InventoryJson, NvidiaGroupsAreAll) {
  NodeInventory inv;
  inv.vendor = Vendor::nvidia;
  EXPECT_EQ(to_json(inv)["groups"], json::parse(R"({"all":true})"));
}

TEST(InventoryJson, NeuronCoresAndBlockGroups) {
  NodeInventory inv;
  inv.vendor = Vendor::neuron;
  for (int i = 0; i < 8; ++i) {
    Device d;
    d.index = d.module_id = i;
    d.model = "trn2";
    d.cores = 4;
    inv.devices.push_back(d);
  }
  json j = to_json(inv);
  EXPECT_EQ(j["devices"][2]["cores"], 4);
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3],[4,5,6,7]]"));
  EXPECT_EQ(j["groups"]["8"], json::parse("[[0,1,2,3,4,5,6,7]]"));
  EXPECT_FALSE(j["groups"].contains("16"));  // Only 8 devices.
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, inv);
  EXPECT_FALSE(to_json(sample())["devices"][0].contains("cores"));  // Other vendors: no cores.
  j["devices"][0]["cores"] = 65;
  auto bad = inventory_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("devices[0].cores"), std::string::npos) << bad.error().message;
}

TEST(InventoryJson, RejectsBadInput) {
  auto j = to_json(sample());
  auto bad = j;
  bad["devices"][1]["module_id"] = 1;  // Duplicate of device 0.
  EXPECT_FALSE(inventory_from_json(bad));
  bad = j;
  bad["devices"][0]["index"] = "zero";
  auto r = inventory_from_json(bad);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("devices[0].index"), std::string::npos) << r.error().message;
  bad = j;
  bad["vendor"] = "rocm";
  EXPECT_FALSE(inventory_from_json(bad));
  bad["vendor"] = "tpu";  // Planned (issue 13), no backend yet.
  EXPECT_FALSE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "intel";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "neuron";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "ascend";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "amd";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["extra"] = 1;
  EXPECT_FALSE(inventory_from_json(bad));
  EXPECT_FALSE(inventory_from_json(json::array()));
}
