// The mthreads-gmi query JSON parser on the recorded excerpt and the assembled 8-card
// output (tests/fixtures/mthreads-gmi, README there), unit handling, and bad input.
#include "tessel/agent/mthreads_gmi_parse.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace tessel::agent::mthreads {
namespace {

using nlohmann::json;
using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_mthreads_gmi_query(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

json one_gpu(json gpu) { return json{{"GPU", json::array({std::move(gpu)})}}; }

TEST(MthreadsGmiParse, RealExcerptOfTwoS5000) {
  auto r = parse_mthreads_gmi_query(fixture("mthreads-gmi/s5000-2-excerpt.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->driver_version, "3.3.5-server");
  ASSERT_EQ(r->devices.size(), 2u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.module_id, 0);
  EXPECT_EQ(d.model, "MTT S5000");
  EXPECT_EQ(d.uuid, "399282a8-ba01-1475-893c-2eeca9e302f5");
  EXPECT_EQ(d.serial, "MY10YL225BF06077");
  EXPECT_EQ(d.bus_id, "00000000:2a:00.0");
  EXPECT_EQ(d.memory_total_mib, 81920);
  EXPECT_EQ(d.memory_used_mib, 0);
  EXPECT_EQ(d.utilization_pct, 0);
  EXPECT_EQ(d.temperature_c, 27);
  EXPECT_EQ(d.power_w, 97);  // "Power Draw " (trailing space): "96.66W".
  EXPECT_TRUE(d.healthy);
  // The second card of the excerpt has no PCI block: no bus id, the rest is read.
  EXPECT_EQ(r->devices[1].bus_id, "");
  EXPECT_EQ(r->devices[1].uuid, "5ebdeb63-ba7a-5904-4f16-495b3e1de6c8");
  EXPECT_EQ(r->devices[1].temperature_c, 26);
}

TEST(MthreadsGmiParse, EightS5000SortedByIndex) {
  auto r = parse_mthreads_gmi_query(fixture("mthreads-gmi/s5000-8.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r->devices[i].index, i);
  json j = json::parse(fixture("mthreads-gmi/s5000-8.json"));
  std::reverse(j["GPU"].begin(), j["GPU"].end());
  auto reversed = parse_mthreads_gmi_query(j.dump());
  ASSERT_TRUE(reversed.ok());
  EXPECT_EQ(reversed->devices, r->devices);
}

TEST(MthreadsGmiParse, UnitsAndUnreadableTelemetry) {
  auto r = parse_mthreads_gmi_query(one_gpu({{"Index", 3},
                                             {"FB Memory Usage", {{"Total", "48GiB"}, {"Used", "N/A"}}},
                                             {"Utilization", {{"Gpu", "12 %"}}},
                                             {"Temperature", {{"GPU Current Temp", "N/A"}}},
                                             {"Power Readings", {{"Power Draw", "[Not Supported]"}}}})
                                        .dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const api::Device& d = r->devices.at(0);
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.memory_total_mib, 48 * 1024);
  EXPECT_FALSE(d.memory_used_mib.has_value());
  EXPECT_EQ(d.utilization_pct, 12);
  EXPECT_FALSE(d.temperature_c.has_value());
  EXPECT_FALSE(d.power_w.has_value());
  EXPECT_EQ(d.model, "");
  // A wrong unit is not a reading: "27F" is no Celsius, "5MB" no MiB.
  auto wrong = parse_mthreads_gmi_query(
      one_gpu({{"Index", "0"}, {"Temperature", {{"GPU Current Temp", "27F"}}}, {"FB Memory Usage", {{"Total", "5MB"}}}})
          .dump());
  ASSERT_TRUE(wrong.ok());
  EXPECT_FALSE(wrong->devices[0].temperature_c.has_value());
  EXPECT_FALSE(wrong->devices[0].memory_total_mib.has_value());
}

TEST(MthreadsGmiParse, NoCards) {
  auto r = parse_mthreads_gmi_query(R"({"Driver Version": "3.3.5-server", "Attached GPUs": "0"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->devices.empty());
  EXPECT_EQ(r->driver_version, "3.3.5-server");
  auto empty_list = parse_mthreads_gmi_query(R"({"GPU": []})");
  ASSERT_TRUE(empty_list.ok());
  EXPECT_TRUE(empty_list->devices.empty());
}

TEST(MthreadsGmiParse, MalformedAndPartialOutputGiveClearErrors) {
  EXPECT_EQ(parse_error(""), "mthreads-gmi: not JSON");
  EXPECT_EQ(parse_error("Failed to initialize MTML: Driver Not Loaded\n"), "mthreads-gmi: not JSON");
  EXPECT_EQ(parse_error(R"({"GPU": [{"Index": "0"}, {"Ind)"), "mthreads-gmi: not JSON");
  EXPECT_EQ(parse_error("[]"), "mthreads-gmi: expected {\"GPU\": [...]}");
  EXPECT_EQ(parse_error(R"({"Attached GPUs": "8"})"), "mthreads-gmi: expected {\"GPU\": [...]}");
  EXPECT_EQ(parse_error(R"({"GPU": {"Index": "0"}})"), "mthreads-gmi GPU: must be a list");
  EXPECT_EQ(parse_error(R"({"GPU": [7]})"), "mthreads-gmi GPU[0]: must be an object");
  EXPECT_EQ(parse_error(R"({"GPU": [{"Product Name": "MTT S5000"}]})"),
            "mthreads-gmi GPU[0].Index: must be an integer 0..1023");
  for (const char* bad : {R"("-1")", R"("1024")", R"("0x1")", R"("")", "1.5", "null", R"("99999")"})
    EXPECT_EQ(parse_error(std::string(R"({"GPU": [{"Index": )") + bad + "}]}"),
              "mthreads-gmi GPU[0].Index: must be an integer 0..1023")
        << bad;
  EXPECT_EQ(parse_error(R"({"GPU": [{"Index": "1"}, {"Index": 1}]})"), "mthreads-gmi: duplicate Index 1");
  EXPECT_EQ(parse_error(R"({"GPU": [{"Index": "0", "GPU UUID": 5}]})"),
            "mthreads-gmi GPU[0].GPU UUID: must be a string");
  EXPECT_EQ(parse_error(R"({"GPU": [{"Index": "0", "Product Name": "MTT\u0001"}]})"),
            "mthreads-gmi GPU[0].Product Name: must be printable ASCII of at most 64 bytes");
  EXPECT_EQ(parse_error(R"({"Driver Version": [], "GPU": []})"), "mthreads-gmi Driver Version: must be a string");
  json many = {{"GPU", json::array()}};
  for (int i = 0; i < 65; ++i) many["GPU"].push_back({{"Index", std::to_string(i)}});
  EXPECT_EQ(parse_error(many.dump()), "mthreads-gmi: more than 64 devices");
}

TEST(MthreadsGmiParse, HugeOrOddNumbersNeverOverflow) {
  auto r = parse_mthreads_gmi_query(one_gpu({{"Index", "0"},
                                             {"FB Memory Usage", {{"Total", "99999999999999999999999GiB"}}},
                                             {"Utilization", {{"Gpu", 1e300}}},
                                             {"Power Readings", {{"Power Draw ", ".5W"}}}})
                                        .dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->devices[0].memory_total_mib.has_value());
  EXPECT_FALSE(r->devices[0].utilization_pct.has_value());
  EXPECT_EQ(r->devices[0].power_w, 1);
}

}  // namespace
}  // namespace tessel::agent::mthreads
