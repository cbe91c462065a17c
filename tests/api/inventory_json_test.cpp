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
  bad["vendor"] = "cuda";  // A device type, not a vendor.
  EXPECT_FALSE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "intel";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "neuron";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "mthreads";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "cambricon";
  EXPECT_TRUE(inventory_from_json(bad));
  bad = j;
  bad["vendor"] = "tpu";
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

TEST(InventoryJson, VersionsAndPortsRoundTrip) {
  auto inv = sample();
  inv.devices[0].firmware_version = "hl-gaudi2-1.17.0-fw-51.2.0-sec-9";
  inv.devices[6].ports_total = 3;  // Module 5.
  inv.devices[6].ports_up = 2;
  inv.devices[6].ports_down = {1};
  inv.devices[7].ports_total = 3;
  inv.devices[7].ports_up = 3;
  json j = to_json(inv);
  EXPECT_EQ(j["devices"][0]["firmware_version"], "hl-gaudi2-1.17.0-fw-51.2.0-sec-9");
  EXPECT_FALSE(j["devices"][1].contains("firmware_version"));
  EXPECT_EQ(j["devices"][6]["ports_down"], json::parse("[1]"));
  EXPECT_EQ(j["devices"][7]["ports_up"], 3);
  EXPECT_FALSE(j["devices"][0].contains("ports_total"));  // No port query: no port fields.
  EXPECT_FALSE(j.contains("ports_error"));
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, inv);
  EXPECT_EQ(modules_with_ports_down(inv), "module 5");
  inv.devices[0].ports_down = {8, 22};
  EXPECT_EQ(modules_with_ports_down(inv), "modules 1, 5");

  inv.ports_error = "reading ports: hl-smi timed out after 10 s";
  back = inventory_from_json(to_json(inv));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->ports_error, inv.ports_error);
}

TEST(InventoryJson, PortFieldsAreChecked) {
  auto bad = [](const char* patch) {
    json j = to_json(sample());
    const json fields = json::parse(patch);
    for (const auto& [k, v] : fields.items()) j["devices"][0][k] = v;
    auto r = inventory_from_json(j);
    return r.ok() ? std::string("(ok)") : r.error().field;
  };
  EXPECT_EQ(bad(R"({"ports_total": 3, "ports_up": 3, "ports_down": []})"), "(ok)");
  EXPECT_EQ(bad(R"({"ports_up": 3, "ports_down": []})"), "inventory.devices[0].ports_total");
  EXPECT_EQ(bad(R"({"ports_total": 3, "ports_up": 4, "ports_down": []})"), "inventory.devices[0].ports_up");
  EXPECT_EQ(bad(R"({"ports_total": 3, "ports_up": 2, "ports_down": "1"})"), "inventory.devices[0].ports_down");
  EXPECT_EQ(bad(R"({"ports_total": 3, "ports_up": 2, "ports_down": [-1]})"), "inventory.devices[0].ports_down");
  EXPECT_EQ(bad(R"({"ports_total": 1, "ports_up": 0, "ports_down": [1, 2]})"), "inventory.devices[0].ports_down");
  EXPECT_EQ(bad(R"({"firmware_version": 7})"), "inventory.devices[0].firmware_version");
}
