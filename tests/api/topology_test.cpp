#include <gtest/gtest.h>

#include "tessel/api/topology.hpp"

using namespace tessel::api;

TEST(Topology, GaudiGroupsAreTheBuddyList) {
  EXPECT_EQ(gaudi_groups_of_size(2), (std::vector<Group>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(gaudi_groups_of_size(4), (std::vector<Group>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(gaudi_groups_of_size(8).size(), 1u);
  EXPECT_TRUE(gaudi_groups_of_size(3).empty());
  for (int s : {0, 1, 2, 4, 8}) EXPECT_TRUE(is_valid_group_size(s));
  for (int s : {-1, 3, 5, 6, 7, 9, 16}) EXPECT_FALSE(is_valid_group_size(s));
}

TEST(Topology, GroupsWithinMissingCards) {
  auto g = gaudi_groups_within({0, 1, 2, 3});
  EXPECT_EQ(g[2], (std::vector<Group>{{0, 1}, {2, 3}}));
  EXPECT_EQ(g[4], (std::vector<Group>{{0, 1, 2, 3}}));
  EXPECT_EQ(g.count(8), 0u);
  auto h = gaudi_groups_within({0, 2, 3, 4, 5, 6, 7});  // Module 1 unhealthy.
  EXPECT_EQ(h[2], (std::vector<Group>{{2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(h[4], (std::vector<Group>{{4, 5, 6, 7}}));
  EXPECT_EQ(h.count(8), 0u);
}
