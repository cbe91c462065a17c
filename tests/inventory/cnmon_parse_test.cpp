// The cnmon info JSON parser on the assembled 8-card file (tests/fixtures/cnmon, README
// there), numbers given as strings with units, and bad input.
#include "tessel/agent/cnmon_parse.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace tessel::agent::cambricon {
namespace {

using nlohmann::json;
using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_cnmon_info(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

json one_card(json card) { return json{{"CnmonInfo", json::array({std::move(card)})}}; }

TEST(CnmonParse, EightMlu370) {
  auto r = parse_cnmon_info(fixture("cnmon/mlu370-x8-8.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 8u);
  const api::Device& d = r->devices[3];
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.module_id, 3);
  EXPECT_EQ(d.model, "MLU370-X8");
  EXPECT_EQ(d.uuid, "MLU-030a1b2c-3d4e-5f60-7182-93a4b5c6d73e");
  EXPECT_EQ(d.bus_id, "0000:3e:00.0");
  EXPECT_EQ(d.memory_total_mib, 24576);
  EXPECT_EQ(d.memory_used_mib, 1536);
  EXPECT_EQ(d.temperature_c, 38);
  EXPECT_EQ(d.utilization_pct, 30);
  EXPECT_TRUE(d.healthy);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r->devices[i].index, i);
}

TEST(CnmonParse, NumbersAsStringsWithUnits) {
  auto r = parse_cnmon_info(one_card({{"CardNum", "2"},
                                      {"PhysicalMemUsage", {{"Total", "24576 MiB"}, {"Used", "N/A"}}},
                                      {"Temperature", {{"Chip", "35C"}}},
                                      {"Utilization", {{"MLUAverage", "7.6 %"}}},
                                      {"PCI", {{"DomainID", "0000"}, {"Bus", "3b"}, {"Device", "00"}}}})
                                .dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const api::Device& d = r->devices.at(0);
  EXPECT_EQ(d.index, 2);
  EXPECT_EQ(d.memory_total_mib, 24576);
  EXPECT_FALSE(d.memory_used_mib.has_value());
  EXPECT_EQ(d.temperature_c, 35);
  EXPECT_EQ(d.utilization_pct, 8);
  EXPECT_EQ(d.bus_id, "");  // No Function: no bus id rather than half of one.
  auto odd = parse_cnmon_info(
      one_card(
          {{"CardNum", 0}, {"Temperature", {{"Chip", -5}}}, {"PhysicalMemUsage", {{"Total", "99999999999999999"}}}})
          .dump());
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(odd->devices[0].temperature_c.has_value());
  EXPECT_FALSE(odd->devices[0].memory_total_mib.has_value());
}

TEST(CnmonParse, EmptyListHasNoCards) {
  auto r = parse_cnmon_info(R"({"CnmonInfo": []})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->devices.empty());
}

TEST(CnmonParse, MalformedAndPartialOutputGiveClearErrors) {
  EXPECT_EQ(parse_error(""), "cnmon: not JSON");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": [{"CardNum": 0}, {"Card)"), "cnmon: not JSON");
  EXPECT_EQ(parse_error("[]"), "cnmon: expected {\"CnmonInfo\": [...]}");
  EXPECT_EQ(parse_error(R"({"Cards": []})"), "cnmon: expected {\"CnmonInfo\": [...]}");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": {}})"), "cnmon CnmonInfo: must be a list");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": ["x"]})"), "cnmon CnmonInfo[0]: must be an object");
  for (const char* bad : {"-1", "1024", R"("a")", R"("")", "2.5", "null", R"("12345")"})
    EXPECT_EQ(parse_error(std::string(R"({"CnmonInfo": [{"CardNum": )") + bad + "}]}"),
              "cnmon CnmonInfo[0].CardNum: must be an integer 0..1023")
        << bad;
  EXPECT_EQ(parse_error(R"({"CnmonInfo": [{"ProductName": "MLU370-X8"}]})"),
            "cnmon CnmonInfo[0].CardNum: must be an integer 0..1023");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": [{"CardNum": 1}, {"CardNum": "1"}]})"), "cnmon: duplicate CardNum 1");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": [{"CardNum": 0, "UUID": 7}]})"), "cnmon CnmonInfo[0].UUID: must be a string");
  EXPECT_EQ(parse_error(R"({"CnmonInfo": [{"CardNum": 0, "ProductName": "MLU\t"}]})"),
            "cnmon CnmonInfo[0].ProductName: must be printable ASCII of at most 64 bytes");
  json many = {{"CnmonInfo", json::array()}};
  for (int i = 0; i < 65; ++i) many["CnmonInfo"].push_back({{"CardNum", i}});
  EXPECT_EQ(parse_error(many.dump()), "cnmon: more than 64 devices");
}

}  // namespace
}  // namespace tessel::agent::cambricon
