// Placement with Gaudi node health: nodes with NIC ports down (gang_block) are not
// used for multi-node gangs but still run single-node jobs; jobs may ask for a
// driver version. Pending reasons name what excluded the nodes.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace tessel::scheduler {
namespace {

using testing::find_placement;
using testing::gaudi_node;
using testing::job;
using testing::reason;

NodeSpec ports_down(NodeSpec n, const std::string& why = "ports down on module 5") {
  n.gang_block = why;
  return n;
}

NodeSpec with_driver(NodeSpec n, const std::string& v) {
  n.driver_version = v;
  return n;
}

PendingJob needs_driver(PendingJob j, const std::string& v) {
  j.driver_version = v;
  return j;
}

TEST(NodeHealth, GangAvoidsNodeWithPortsDown) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(ports_down(gaudi_node("n2")));
  a.upsert_node(gaudi_node("n3"));
  auto r = a.schedule({job("gang", 8, 2)}, 0);
  const Placement* p = find_placement(r, "gang");
  ASSERT_NE(p, nullptr) << reason(r, "gang");
  for (const auto& al : p->allocations) EXPECT_NE(al.node, "n2");
}

TEST(NodeHealth, GangWaitsWithTheReasonWhenOnlyABlockedNodeWouldDo) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(ports_down(gaudi_node("n3")));
  auto r = a.schedule({job("gang", 4, 2)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "gang"), "only 1 node has 4 healthy cards, job needs 2 (node n3: ports down on module 5)");
  EXPECT_TRUE(r.reservations.empty());  // Nothing to wait for: no reservation over the blocked node.
}

TEST(NodeHealth, SingleNodeJobStillRunsOnANodeWithPortsDown) {
  ModuleGroupAllocator a;
  a.upsert_node(ports_down(gaudi_node("n3")));
  auto r = a.schedule({job("one", 8), job("gang", 0, 2)}, 0);
  ASSERT_NE(find_placement(r, "one"), nullptr) << reason(r, "one");
  EXPECT_EQ(find_placement(r, "one")->allocations[0].node, "n3");
}

TEST(NodeHealth, GangWithoutCardsAlsoAvoidsBlockedNodes) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(ports_down(gaudi_node("n2")));
  auto r = a.schedule({job("g0", 0, 2)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_NE(reason(r, "g0").find("node n2: ports down on module 5"), std::string::npos) << reason(r, "g0");
  a.upsert_node(gaudi_node("n2"));  // The port came back up.
  r = a.schedule({job("g0", 0, 2)}, 0);
  EXPECT_NE(find_placement(r, "g0"), nullptr) << reason(r, "g0");
}

TEST(NodeHealth, GangWaitsForBusyHealthyNodesRatherThanUsingABlockedOne) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(gaudi_node("n2"));
  a.upsert_node(ports_down(gaudi_node("n3")));
  a.hold("busy", {{"n2", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}}}, int64_t{60000});
  auto r = a.schedule({job("gang", 8, 2)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "gang"), "waiting for 8 free cards in one valid group on each of 2 nodes");
  ASSERT_EQ(r.reservations.size(), 1u);
  for (const auto& al : r.reservations[0].allocations) EXPECT_NE(al.node, "n3");
}

TEST(NodeHealth, DriverVersionConstraintPicksMatchingNodes) {
  ModuleGroupAllocator a;
  a.upsert_node(with_driver(gaudi_node("old"), "1.16.2-f195ec4"));
  a.upsert_node(with_driver(gaudi_node("new"), "1.17.0-e4d8f8b"));
  auto r = a.schedule({needs_driver(job("exact", 1), "1.17.0"), needs_driver(job("prefix", 1), "1.16")}, 0);
  ASSERT_NE(find_placement(r, "exact"), nullptr) << reason(r, "exact");
  EXPECT_EQ(find_placement(r, "exact")->allocations[0].node, "new");
  ASSERT_NE(find_placement(r, "prefix"), nullptr) << reason(r, "prefix");
  EXPECT_EQ(find_placement(r, "prefix")->allocations[0].node, "old");
}

TEST(NodeHealth, DriverVersionConstraintThatNoNodeMeetsSaysSo) {
  ModuleGroupAllocator a;
  a.upsert_node(with_driver(gaudi_node("old"), "1.16.2-f195ec4"));
  auto r = a.schedule({needs_driver(job("j", 2), "1.17.0"), needs_driver(job("j1", 2), "1.1")}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "j"), "no node has 2 healthy cards (driver_version 1.17.0; node old: driver 1.16.2-f195ec4)");
  EXPECT_NE(reason(r, "j1").find("driver_version 1.1;"), std::string::npos) << reason(r, "j1");  // "1.1" is not "1.16".
}

TEST(NodeHealth, DriverConstraintDoesNotShareFailuresWithUnconstrainedJobs) {
  ModuleGroupAllocator a;
  a.upsert_node(with_driver(gaudi_node("old"), "1.16.2-f195ec4"));
  auto r = a.schedule({needs_driver(job("j", 2, 1, 0, 1), "1.17.0"), job("any", 2, 1, 0, 2)}, 0);
  EXPECT_EQ(find_placement(r, "j"), nullptr);
  EXPECT_NE(find_placement(r, "any"), nullptr) << reason(r, "any");
}

TEST(NodeHealth, DriverVersionMatching) {
  EXPECT_TRUE(api::driver_version_matches("", "anything"));
  EXPECT_TRUE(api::driver_version_matches("1.17.0", "1.17.0"));
  EXPECT_TRUE(api::driver_version_matches("1.17.0", "1.17.0-e4d8f8b"));
  EXPECT_TRUE(api::driver_version_matches("1.17", "1.17.0-e4d8f8b"));
  EXPECT_FALSE(api::driver_version_matches("1.17.0", "1.17.01"));
  EXPECT_FALSE(api::driver_version_matches("1.1", "1.17.0"));
  EXPECT_FALSE(api::driver_version_matches("1.17.0", "1.17"));
  EXPECT_FALSE(api::driver_version_matches("1.17.0", "unknown"));
  EXPECT_FALSE(api::driver_version_matches("1.17.0", ""));
}

}  // namespace
}  // namespace tessel::scheduler
