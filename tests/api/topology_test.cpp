#include <gtest/gtest.h>

#include <set>

#include "tessel/api/topology.hpp"

using namespace tessel::api;

TEST(Topology, GaudiGroupsAreTheBuddyList) {
  EXPECT_EQ(gaudi_groups_of_size(2), (std::vector<Group>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(gaudi_groups_of_size(4), (std::vector<Group>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(gaudi_groups_of_size(8).size(), 1u);
  EXPECT_TRUE(gaudi_groups_of_size(3).empty());
  for (int s : {1, 2, 4, 8}) EXPECT_TRUE(rule_allows(GroupRule::buddy8, s));
  for (int s : {-1, 0, 3, 5, 6, 7, 9, 16}) EXPECT_FALSE(rule_allows(GroupRule::buddy8, s));
}

TEST(Topology, RulesBySizeAndModel) {
  EXPECT_EQ(group_rule(Vendor::neuron, "trn2"), GroupRule::neuron16);
  EXPECT_EQ(group_rule(Vendor::neuron, ""), GroupRule::neuron16);
  EXPECT_EQ(group_rule(Vendor::neuron, "inf2"), GroupRule::ring16);
  EXPECT_EQ(group_rule(Vendor::neuron, "inf1"), GroupRule::ring16);
  EXPECT_EQ(group_rule(Vendor::nvidia, "inf2"), GroupRule::any_subset);  // Only Neuron has Inferentia.
  for (int s = 1; s <= 16; ++s) EXPECT_TRUE(rule_allows(GroupRule::ring16, s)) << s;
  EXPECT_FALSE(rule_allows(GroupRule::ring16, 17));
  for (int s : {1, 4, 8, 16}) EXPECT_TRUE(rule_allows(GroupRule::neuron16, s));
  for (int s : {2, 3, 12}) EXPECT_FALSE(rule_allows(GroupRule::neuron16, s));
  EXPECT_TRUE(rule_allows(GroupRule::any_subset, 32));
  EXPECT_FALSE(rule_allows(GroupRule::any_subset, 33));
  EXPECT_EQ(devices_error(3, std::nullopt, ""), "");
  EXPECT_EQ(devices_error(33, std::nullopt, ""), "must be 0 to 32");
  EXPECT_EQ(devices_error(6, Vendor::tpu, ""), "must be 0, 1, 2, 4 or 8 with vendor tpu");
  EXPECT_EQ(devices_error(17, Vendor::neuron, ""), "must be 0 to 16 with vendor neuron");
  EXPECT_EQ(devices_error(17, Vendor::neuron, "inf2"), "must be 0 to 16 with vendor neuron and model inf2");
  EXPECT_EQ(devices_error(0, Vendor::habana, ""), "");
}

// Inferentia: any run of adjacent healthy devices, by size; the inventory's rule comes
// from its devices' model.
TEST(Topology, InferentiaGroupsAreRunsOfAdjacentDevices) {
  auto g = groups_within(GroupRule::ring16, {0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11});  // Device 3 unhealthy.
  EXPECT_EQ(g[3], (std::vector<Group>{{0, 1, 2}, {4, 5, 6}, {5, 6, 7}, {6, 7, 8}, {7, 8, 9}, {8, 9, 10}, {9, 10, 11}}));
  EXPECT_EQ(g[8], (std::vector<Group>{{4, 5, 6, 7, 8, 9, 10, 11}}));
  EXPECT_EQ(g.count(9), 0u);
  EXPECT_EQ(g.count(1), 0u);  // Single devices are not listed (as for every rule).
  NodeInventory inv;
  inv.vendor = Vendor::neuron;
  EXPECT_EQ(group_rule(inv), GroupRule::neuron16);
  inv.devices.resize(2);
  inv.devices[0].model = inv.devices[1].model = "inf2";
  EXPECT_EQ(group_rule(inv), GroupRule::ring16);
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

// The Neuron table as a property: every group of every valid size is an aligned,
// contiguous block inside 0..15, the blocks of one size tile the 16 devices, and no
// other size has a group (Trn1/Trn2 run 1, 4, 8 or 16 devices).
TEST(Topology, NeuronGroupsAreAlignedBlocksOf1_4_8_16) {
  EXPECT_EQ(group_rule(Vendor::neuron), GroupRule::neuron16);
  EXPECT_FALSE(any_subset_is_valid(Vendor::neuron));
  for (int size = 0; size <= 32; ++size) {
    const auto& groups = neuron_groups_of_size(size);
    const bool valid = size == 1 || size == 4 || size == 8 || size == 16;
    if (!valid) {
      EXPECT_TRUE(groups.empty()) << size;
      continue;
    }
    ASSERT_EQ(static_cast<int>(groups.size()), 16 / size);
    std::set<int> covered;
    for (const Group& g : groups) {
      ASSERT_EQ(static_cast<int>(g.size()), size);
      EXPECT_EQ(g.front() % size, 0) << "group of " << size << " not aligned";
      for (size_t i = 1; i < g.size(); ++i) EXPECT_EQ(g[i], g[i - 1] + 1) << "group of " << size << " has a gap";
      covered.insert(g.begin(), g.end());
    }
    EXPECT_EQ(covered.size(), 16u);
    EXPECT_EQ(*covered.rbegin(), 15);
  }
}

TEST(Topology, NeuronGroupsWithinHealthyDevices) {
  std::set<int> usable;
  for (int i = 0; i < 16; ++i)
    if (i != 5) usable.insert(i);  // Device 5 unhealthy: its quad, octet and the 16 are gone.
  auto g = groups_within(GroupRule::neuron16, usable);
  EXPECT_EQ(g[4], (std::vector<Group>{{0, 1, 2, 3}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  EXPECT_EQ(g[8], (std::vector<Group>{{8, 9, 10, 11, 12, 13, 14, 15}}));
  EXPECT_EQ(g.count(16), 0u);
  EXPECT_EQ(g.count(2), 0u);
  EXPECT_EQ(groups_within(GroupRule::buddy8, {0, 1}), gaudi_groups_within({0, 1}));
  EXPECT_TRUE(groups_within(GroupRule::any_subset, {0, 1, 2, 3}).empty());
}

TEST(Topology, IntelAnySubset) {
  EXPECT_TRUE(any_subset_is_valid(Vendor::intel));
  EXPECT_EQ(group_rule(Vendor::intel), GroupRule::any_subset);
}
