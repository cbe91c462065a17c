// The amd-smi JSON parser on recorded and assembled outputs (tests/fixtures/amd-smi,
// README there), both shapes, and malformed input.
#include "tessel/agent/amd_smi_parse.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace tessel::agent::amd {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_amd_smi_static(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

TEST(AmdSmiParse, RealMi210GpuDataShape) {
  auto r = parse_amd_smi_static(fixture("amd-smi/mi210-static-gpu-data.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.module_id, 0);
  EXPECT_EQ(d.model, "AMD Instinct MI210");
  EXPECT_EQ(d.memory_total_mib, 65520);
  EXPECT_EQ(d.serial, "");  // This output has no asic_serial ...
  EXPECT_EQ(d.uuid, "");    // ... so the card is named by index in ROCR_VISIBLE_DEVICES.
  EXPECT_EQ(d.bus_id, "");
  EXPECT_FALSE(d.temperature_c.has_value());
  EXPECT_TRUE(d.healthy);
  // The kernel banner this driver prints is cut to what the wire allows.
  EXPECT_EQ(r->driver_version.size(), 128u);
  EXPECT_EQ(r->driver_version.rfind("Linuxversion6.14.0-24-generic", 0), 0u);
}

TEST(AmdSmiParse, EightMi300xWithRocrUuids) {
  auto r = parse_amd_smi_static(fixture("amd-smi/mi300x-8-static-gpu-data.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->driver_version, "6.8.5");
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(r->devices[i].index, i);
    EXPECT_EQ(r->devices[i].model, "AMD Instinct MI300X");
    EXPECT_EQ(r->devices[i].memory_total_mib, 196592);
  }
  EXPECT_EQ(r->devices[0].serial, "0x7EF570DB1B346018");
  EXPECT_EQ(r->devices[0].uuid, "GPU-7ef570db1b346018");
  EXPECT_EQ(r->devices[0].bus_id, "0000:0c:00.0");
  EXPECT_EQ(r->devices[7].uuid, "GPU-60df3a497362c611");
  EXPECT_EQ(r->devices[7].bus_id, "0000:df:00.0");
}

TEST(AmdSmiParse, OlderBareListShapeSortedByIndex) {
  auto r = parse_amd_smi_static(fixture("amd-smi/mi250x-2-static-list.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].index, 0);
  EXPECT_EQ(r->devices[0].uuid, "GPU-7ef570db1b346018");
  EXPECT_EQ(r->devices[0].bus_id, "0000:63:00.0");
  EXPECT_EQ(r->devices[0].memory_total_mib, 65520);  // A bare number of MB.
  EXPECT_EQ(r->devices[1].uuid, "GPU-6be2ee3b2b314cfc");
  EXPECT_FALSE(r->devices[1].memory_total_mib.has_value());  // "N/A".
  EXPECT_EQ(r->driver_version, "6.2.4");
}

TEST(AmdSmiParse, EmptyListsGiveNoDevices) {
  for (const char* text : {"[]", "{\"gpu_data\": []}", " [ ]\n"}) {
    auto r = parse_amd_smi_static(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_TRUE(r->devices.empty());
  }
}

TEST(AmdSmiParse, MalformedInputIsAnErrorNamingThePlace) {
  EXPECT_EQ(parse_error(""), "amd-smi: not JSON");
  EXPECT_EQ(parse_error("GPU: 0\n    BDF: 0000:23:00.0\n"), "amd-smi: not JSON");
  EXPECT_EQ(parse_error("[{\"gpu\": 0,"), "amd-smi: not JSON");
  EXPECT_EQ(parse_error("{\"gpus\": []}"), "amd-smi: expected a JSON list of GPUs or {\"gpu_data\": [...]}");
  EXPECT_EQ(parse_error("42"), "amd-smi: expected a JSON list of GPUs or {\"gpu_data\": [...]}");
  EXPECT_EQ(parse_error("[1]"), "amd-smi [0]: must be an object");
  EXPECT_EQ(parse_error("{\"gpu_data\": [{\"asic\": {}}]}"), "amd-smi gpu_data[0].gpu: must be an integer 0..1023");
  EXPECT_EQ(parse_error("[{\"gpu\": -1}]"), "amd-smi [0].gpu: must be an integer 0..1023");
  EXPECT_EQ(parse_error("[{\"gpu\": 0}, {\"gpu\": 0}]"), "amd-smi: duplicate gpu 0");
  EXPECT_EQ(parse_error("[{\"gpu\": 0, \"asic\": {\"market_name\": 7}}]"),
            "amd-smi [0].asic.market_name: must be a string");
  EXPECT_EQ(parse_error("[{\"gpu\": 0, \"asic\": {\"market_name\": \"bad\\u0001\"}}]"),
            "amd-smi [0].asic.market_name: must be printable ASCII of at most 64 bytes");
  EXPECT_EQ(parse_error("[{\"gpu\": 0, \"vram\": {\"size\": {\"value\": 1, \"unit\": \"GB\"}}}]"),
            "amd-smi [0].vram.size.unit: must be \"MB\"");
  EXPECT_EQ(parse_error("[{\"gpu\": 0, \"vram\": {\"size\": \"lots\"}}]"),
            "amd-smi [0].vram.size: must be a number of MB");
}

TEST(AmdSmiParse, MinimalEntryAndNotAvailableReadings) {
  auto r = parse_amd_smi_static(
      R"([{"gpu": 3, "asic": {"market_name": "N/A", "asic_serial": "N/A"}, "bus": {"bdf": "N/A"},
           "vram": {"size": {"value": "N/A", "unit": "MB"}}, "driver": {"version": "N/A"}}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  EXPECT_EQ(r->devices[0].index, 3);
  EXPECT_EQ(r->devices[0].model, "");
  EXPECT_EQ(r->devices[0].uuid, "");
  EXPECT_FALSE(r->devices[0].memory_total_mib.has_value());
  EXPECT_EQ(r->driver_version, "");
}

TEST(AmdSmiParse, RocrUuidFromAsicSerial) {
  EXPECT_EQ(rocr_uuid("0x7EF570DB1B346018"), "GPU-7ef570db1b346018");
  EXPECT_EQ(rocr_uuid("7ef570db1b346018"), "GPU-7ef570db1b346018");
  EXPECT_EQ(rocr_uuid("0x0000000000000000"), "");  // Consumer parts: no serial.
  EXPECT_EQ(rocr_uuid("N/A"), "");
  EXPECT_EQ(rocr_uuid(""), "");
  EXPECT_EQ(rocr_uuid("0x"), "");
  EXPECT_EQ(rocr_uuid("0x7EF570DB1B3460181"), "");  // 17 digits.
  EXPECT_EQ(rocr_uuid("0xZZ"), "");
}

TEST(AmdSmiParse, ResultAlwaysSerialises) {
  auto r = parse_amd_smi_static(fixture("amd-smi/mi300x-8-static-gpu-data.json"));
  ASSERT_TRUE(r.ok());
  api::NodeInventory inv{api::Vendor::amd, r->driver_version, r->devices};
  auto back = api::inventory_from_json(api::to_json(inv));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, inv);
  EXPECT_EQ(api::to_json(inv)["groups"], nlohmann::json({{"all", true}}));  // Any subset.
  EXPECT_EQ(api::to_json(inv)["vendor"], "amd");
}

}  // namespace
}  // namespace tessel::agent::amd
