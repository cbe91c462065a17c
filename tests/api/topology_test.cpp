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

TEST(Topology, AscendGroupsStayInsideOneHccsRing) {
  // 910A-class boards: rings {0-3} and {4-7}; a group of 1, 2 or 4 sits in one ring.
  EXPECT_FALSE(any_subset_is_valid(Vendor::ascend));
  for (int size : {1, 2, 4}) {
    for (const Group& g : gaudi_groups_of_size(size)) {
      ASSERT_EQ(static_cast<int>(g.size()), size);
      EXPECT_EQ(g.front() / 4, g.back() / 4) << "group of " << size << " spans both rings";
    }
  }
  EXPECT_EQ(gaudi_groups_of_size(8), (std::vector<Group>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  for (Vendor v : {Vendor::nvidia, Vendor::amd}) EXPECT_TRUE(any_subset_is_valid(v));
  EXPECT_FALSE(any_subset_is_valid(Vendor::habana));
}
