#include "tessel/cli/card_map.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tessel::cli {
namespace {

using nlohmann::json;

json device(int module_id, bool healthy, json job = nullptr) {
  return {{"index", module_id}, {"module_id", module_id}, {"model", "HL-225"}, {"healthy", healthy}, {"job", job}};
}

TEST(CardMap, MarksUsedFreeUnhealthyAbsent) {
  json devs = json::array();
  devs.push_back(device(1, true, "j-1"));
  devs.push_back(device(0, true, "j-1"));
  devs.push_back(device(2, true));
  devs.push_back(device(3, true));
  devs.push_back(device(4, true));
  devs.push_back(device(6, false, "j-2"));  // Unhealthy wins over in use.
  devs.push_back(device(7, true));
  EXPECT_EQ(render_card_map(devs), "[UU...-X.]");
}

TEST(CardMap, EmptyAndNonsense) {
  EXPECT_EQ(render_card_map(json::array()), "[]");
  EXPECT_EQ(render_card_map(json()), "[]");
  json devs = json::array({device(0, true), {{"module_id", "x"}}, {{"module_id", 100000}}});
  EXPECT_EQ(render_card_map(devs), "[.-------]");
}

TEST(CardMap, MissingJobFieldMeansFree) {
  json devs = json::array({{{"module_id", 0}, {"healthy", true}}});
  EXPECT_EQ(render_card_map(devs), "[.-------]");
}

TEST(CardMap, WiderThanEight) {
  json devs = json::array({device(9, true)});
  EXPECT_EQ(render_card_map(devs), "[---------.]");
}

TEST(FreeGroups, FormatGroup) {
  EXPECT_EQ(format_group({3, 2}), "{2,3}");
  EXPECT_EQ(format_group({7, 4, 5, 6}), "{4-7}");
  EXPECT_EQ(format_group({0, 2, 4}), "{0,2,4}");
  EXPECT_EQ(format_group({5}), "{5}");
}

TEST(FreeGroups, ShowsOnlyMaximalGroupsLargestFirst) {
  json fg = {{"1", {{2}, {3}, {4}, {5}, {6}, {7}, {0}}},
             {"2", {{2, 3}, {4, 5}, {6, 7}}},
             {"4", {{4, 5, 6, 7}}},
             {"8", json::array()}};
  EXPECT_EQ(render_free_groups(fg), "4:{4-7} 2:{2,3} 1:{0}");
}

TEST(FreeGroups, NoneIsDash) {
  EXPECT_EQ(render_free_groups(json::object()), "-");
  EXPECT_EQ(render_free_groups(json()), "-");
  EXPECT_EQ(render_free_groups({{"2", json::array()}}), "-");
}

TEST(FreeGroups, Counts) {
  EXPECT_EQ(render_free_group_counts({{"8", 0}, {"1", 5}, {"2", 2}, {"4", 1}}), "1:5 2:2 4:1 8:0");
  EXPECT_EQ(render_free_group_counts(json()), "-");
}

}  // namespace
}  // namespace tessel::cli
