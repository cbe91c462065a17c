// The xpu-smi discovery JSON parser on recorded and assembled outputs
// (tests/fixtures/xpu-smi, README there), SR-IOV listings, and malformed input.
#include "tessel/agent/xpu_smi_parse.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace tessel::agent::intel {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_xpu_smi_discovery(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

TEST(XpuSmiParse, TwoMax1100) {
  auto r = parse_xpu_smi_discovery(fixture("xpu-smi/max1100-2-discovery.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  const api::Device& d = r->devices[1];
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.module_id, 1);
  EXPECT_EQ(d.model, "Intel(R) Data Center GPU Max 1100");
  EXPECT_EQ(d.bus_id, "0000:9a:00.0");
  EXPECT_EQ(d.uuid, "00000000-0000-009a-0000-002f0bda8086");
  EXPECT_EQ(d.serial, "");
  EXPECT_FALSE(d.memory_total_mib.has_value());
  EXPECT_TRUE(d.healthy);
  EXPECT_EQ(r->driver_version, "");
}

TEST(XpuSmiParse, IntelGuideExampleWithoutFunctionType) {
  auto r = parse_xpu_smi_discovery(fixture("xpu-smi/xpumanager-guide-1-discovery.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].model, "Intel(R) Graphics [0x020a]");
  EXPECT_EQ(r->devices[0].bus_id, "0000:4d:00.0");
}

TEST(XpuSmiParse, FourMax1550) {
  auto r = parse_xpu_smi_discovery(fixture("xpu-smi/max1550-4-discovery.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r->devices[i].index, i);
  EXPECT_EQ(r->devices[3].uuid, "00000000-0000-0096-0000-002f0bd58086");
}

TEST(XpuSmiParse, SriovHostKeepsPhysicalFunctionsOnly) {
  auto r = parse_xpu_smi_discovery(fixture("xpu-smi/max1550-2-sriov-discovery.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].bus_id, "0000:18:00.0");
  EXPECT_EQ(r->devices[1].bus_id, "0000:42:00.0");
}

TEST(XpuSmiParse, VirtualMachineSeesItsVirtualFunctions) {
  auto r = parse_xpu_smi_discovery(
      R"({"device_list": [{"device_id": 0, "device_function_type": "virtual", "device_name": "VF"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].model, "VF");
}

TEST(XpuSmiParse, SortsByIndexAndAcceptsCrlf) {
  auto r = parse_xpu_smi_discovery("{\"device_list\": [{\"device_id\": 3},\r\n{\"device_id\": 1}]}\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].index, 1);
  EXPECT_EQ(r->devices[1].index, 3);
}

TEST(XpuSmiParse, EmptyListGivesNoDevices) {
  auto r = parse_xpu_smi_discovery(R"({"device_list": []})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->devices.empty());
}

TEST(XpuSmiParse, MalformedInputNamesTheProblem) {
  EXPECT_EQ(parse_error(""), "xpu-smi: not JSON");
  EXPECT_EQ(parse_error("+-----------+\n| Device ID |"), "xpu-smi: not JSON");
  EXPECT_EQ(parse_error("[]"), "xpu-smi: expected {\"device_list\": [...]}");
  EXPECT_EQ(parse_error("{}"), "xpu-smi: expected {\"device_list\": [...]}");
  EXPECT_EQ(parse_error(R"({"error": "Level Zero Initialization Error"})"), "xpu-smi: Level Zero Initialization Error");
  EXPECT_EQ(parse_error(R"({"device_list": {}})"), "xpu-smi device_list: must be a list");
  EXPECT_EQ(parse_error(R"({"device_list": [1]})"), "xpu-smi device_list[0]: must be an object");
  EXPECT_EQ(parse_error(R"({"device_list": [{"device_id": 0}, {"device_id": "1"}]})"),
            "xpu-smi device_list[1].device_id: must be an integer 0..1023");
  EXPECT_EQ(parse_error(R"({"device_list": [{"device_id": 1024}]})"),
            "xpu-smi device_list[0].device_id: must be an integer 0..1023");
  EXPECT_EQ(parse_error(R"({"device_list": [{"device_id": 2}, {"device_id": 2}]})"), "xpu-smi: duplicate device_id 2");
  EXPECT_EQ(parse_error(R"({"device_list": [{"device_id": 0, "uuid": 5}]})"),
            "xpu-smi device_list[0].uuid: must be a string");
  EXPECT_EQ(parse_error(R"({"device_list": [{"device_id": 0, "device_name": "a\u0001b"}]})"),
            "xpu-smi device_list[0].device_name: must be printable ASCII of at most 64 bytes");
}

TEST(XpuSmiParse, MoreThan64DevicesIsAnError) {
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < 65; ++i) list.push_back({{"device_id", i}});
  EXPECT_EQ(parse_error(nlohmann::json{{"device_list", list}}.dump()), "xpu-smi: more than 64 devices");
}

}  // namespace
}  // namespace tessel::agent::intel
