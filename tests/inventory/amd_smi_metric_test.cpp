// The amd-smi metric parser on a recorded and an assembled output (tests/fixtures/amd-smi,
// README there), both shapes, N/A readings and malformed input; and merging readings
// into devices.
#include "tessel/agent/amd_smi_metric.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tessel::agent::amd {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_amd_smi_metric(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

smi::Telemetry only(std::string_view text) {
  auto r = parse_amd_smi_metric(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.ok() ? r->size() : 0u, 1u);
  return r.ok() && r->size() == 1 ? (*r)[0] : smi::Telemetry{};
}

TEST(AmdSmiMetric, RealRx6600BareList) {
  auto r = parse_amd_smi_metric(fixture("amd-smi/rx6600-metric-list.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], (smi::Telemetry{0, 1, 37, 6, 202}));  // Hotspot, not edge (36).
}

TEST(AmdSmiMetric, EightMi300xGpuDataWithNaReadings) {
  auto r = parse_amd_smi_metric(fixture("amd-smi/mi300x-8-metric-gpu-data.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 8u);
  EXPECT_EQ((*r)[0], (smi::Telemetry{0, 98, 71, 701, 183042}));
  EXPECT_EQ((*r)[5], (smi::Telemetry{5, 44, 54, std::nullopt, 96310}));          // socket_power "N/A".
  EXPECT_EQ((*r)[6].temperature_c, 33);                                          // No hotspot: edge.
  EXPECT_EQ((*r)[7], (smi::Telemetry{7, std::nullopt, 36, 130, std::nullopt}));  // {"value": "N/A"}.
}

TEST(AmdSmiMetric, OlderSpellings) {
  // Bare numbers, average_socket_power, fractions rounded.
  EXPECT_EQ(only(R"([{"gpu": 2, "usage": {"gfx_activity": 42.6}, "power": {"average_socket_power": 90},
                     "temperature": {"edge": 30}, "mem_usage": {"used_vram": 10}}])"),
            (smi::Telemetry{2, 43, 30, 90, 10}));
}

TEST(AmdSmiMetric, UnreadableReadingsAreNullNotErrors) {
  const smi::Telemetry none{3, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(only(R"({"gpu_data": [{"gpu": 3}]})"), none);
  EXPECT_EQ(only(R"([{"gpu": 3, "usage": "N/A", "power": "N/A", "temperature": "N/A", "mem_usage": "N/A"}])"), none);
  EXPECT_EQ(only(R"([{"gpu": 3, "usage": {"gfx_activity": {"value": 5, "unit": "W"}},
                     "power": {"socket_power": {"value": -1, "unit": "W"}},
                     "temperature": {"hotspot": {"unit": "C"}, "edge": [1]},
                     "mem_usage": {"used_vram": {"value": 1e12, "unit": "MB"}}}])"),
            none);
}

TEST(AmdSmiMetric, EmptyListGivesNoReadings) {
  auto r = parse_amd_smi_metric("[]");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
  r = parse_amd_smi_metric(R"({"gpu_data": []})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(AmdSmiMetric, MalformedDocuments) {
  EXPECT_EQ(parse_error(""), "amd-smi metric: not JSON");
  EXPECT_EQ(parse_error("WARNING: not in render group\n[]"), "amd-smi metric: not JSON");
  EXPECT_EQ(parse_error(R"({"gpus": []})"), "amd-smi metric: expected a JSON list of GPUs or {\"gpu_data\": [...]}");
  EXPECT_EQ(parse_error(R"({"gpu_data": {}})"),
            "amd-smi metric: expected a JSON list of GPUs or {\"gpu_data\": [...]}");
  EXPECT_EQ(parse_error(R"({"gpu_data": [{"gpu": 0}, {"gpu": "1"}]})"),
            "amd-smi metric gpu_data[1].gpu: must be an integer 0..1023");
  EXPECT_EQ(parse_error("[3]"), "amd-smi metric [0]: must be an object");
  EXPECT_EQ(parse_error(R"([{"gpu": 1}, {"gpu": 1}])"), "amd-smi metric: duplicate gpu 1");
  std::string many = "[";
  for (int i = 0; i < 65; ++i) many += (i ? "," : "") + std::string(R"({"gpu": )") + std::to_string(i) + "}";
  EXPECT_EQ(parse_error(many + "]"), "amd-smi metric: more than 64 GPUs");
}

TEST(AmdSmiMetric, ArgsAskForTheFourGroupsInJson) {
  EXPECT_EQ(metric_args(),
            (std::vector<std::string>{"metric", "--usage", "--power", "--temperature", "--mem-usage", "--json"}));
}

TEST(MergeTelemetry, ByIndexLeavingOthersAlone) {
  std::vector<api::Device> devices(3);
  for (int i = 0; i < 3; ++i) devices[i].index = i * 2;  // 0, 2, 4.
  devices[2].memory_total_mib = 1000;
  smi::merge_telemetry({{4, 1, 2, 3, 4}, {9, 9, 9, 9, 9}, {0, 5, std::nullopt, 6, 7}}, devices);
  EXPECT_EQ(devices[0].utilization_pct, 5);
  EXPECT_FALSE(devices[0].temperature_c.has_value());
  EXPECT_EQ(devices[0].power_w, 6);
  EXPECT_FALSE(devices[1].utilization_pct.has_value());  // No reading for index 2.
  EXPECT_EQ(devices[2].memory_used_mib, 4);
  EXPECT_EQ(devices[2].memory_total_mib, 1000);  // Not a telemetry field.
}

}  // namespace
}  // namespace tessel::agent::amd
