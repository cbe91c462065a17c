// Unit tests of ModuleGroupAllocator placement: valid groups, best fit, health,
// constraints, gangs, jobs without cards and pending reasons.
#include <cmath>
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace tessel::scheduler {
namespace {

using testing::find_placement;
using testing::gaudi_node;
using testing::job;
using testing::nvidia_node;
using testing::reason;

TEST(Allocator, PlacesSingleOnModuleZeroWithMatchingIndex) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  auto r = a.schedule({job("j1", 1)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  const api::Allocation& al = r.placed[0].allocations.at(0);
  EXPECT_EQ(al.node, "n1");
  EXPECT_EQ(al.rank, 0);
  EXPECT_EQ(al.module_ids, (std::vector<int>{0}));
  EXPECT_EQ(al.indices, (std::vector<int>{7}));
  EXPECT_EQ(a.holder("n1", 0), "j1");
  EXPECT_EQ(a.holder("n1", 1), std::nullopt);
}

TEST(Allocator, AnyFreeCardTracksHoldsAndSchedulability) {
  ModuleGroupAllocator a;
  EXPECT_FALSE(a.any_free_card());  // No nodes.
  a.upsert_node(gaudi_node("n1"));
  EXPECT_TRUE(a.any_free_card());
  ASSERT_EQ(a.schedule({job("j1", 8)}, 0).placed.size(), 1u);
  EXPECT_FALSE(a.any_free_card());
  a.release("j1");
  EXPECT_TRUE(a.any_free_card());
  a.set_schedulable("n1", false);
  EXPECT_FALSE(a.any_free_card());
}

TEST(Allocator, BuddyBestFitKeepsLargeGroupsFree) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  auto r = a.schedule({job("s1", 1, 1, 0, 1), job("s2", 1, 1, 0, 2), job("p", 2, 1, 0, 3), job("q", 4, 1, 0, 4)}, 0);
  ASSERT_EQ(r.placed.size(), 4u);
  EXPECT_EQ(find_placement(r, "s1")->allocations[0].module_ids, (std::vector<int>{0}));
  EXPECT_EQ(find_placement(r, "s2")->allocations[0].module_ids, (std::vector<int>{1}));
  EXPECT_EQ(find_placement(r, "p")->allocations[0].module_ids, (std::vector<int>{2, 3}));
  EXPECT_EQ(find_placement(r, "q")->allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(find_placement(r, "q")->allocations[0].indices, (std::vector<int>{3, 2, 1, 0}));
}

TEST(Allocator, PrefersTheMostUsedNode) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("a"));
  a.upsert_node(gaudi_node("b"));
  a.hold("running", {{"b", 0, {0, 1, 2, 3}, {7, 6, 5, 4}}}, std::nullopt);
  auto r = a.schedule({job("j", 4)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].allocations[0].node, "b");
  EXPECT_EQ(r.placed[0].allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Allocator, NeverUsesUnhealthyCards) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1", {0, 1, 2, 3, 4, 5, 6, 7}, {3}));
  auto r = a.schedule({job("q1", 4, 1, 0, 1), job("q2", 4, 1, 0, 2), job("e", 8, 1, 0, 3)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(reason(r, "q2"), "waiting for 4 free cards in one valid group");
  EXPECT_EQ(reason(r, "e"), "no node has 8 healthy cards");
  // Singles go to the pair broken by the unhealthy card first.
  auto r2 = a.schedule({job("s", 1)}, 0);
  EXPECT_EQ(r2.placed.at(0).allocations[0].module_ids, (std::vector<int>{2}));
}

TEST(Allocator, FourCardNodes) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1", {0, 1, 2, 3}));
  auto r = a.schedule({job("e", 8, 1, 0, 1), job("q", 4, 1, 0, 2)}, 0);
  EXPECT_EQ(reason(r, "e"), "no node has 8 healthy cards");
  ASSERT_NE(find_placement(r, "q"), nullptr);
  EXPECT_EQ(find_placement(r, "q")->allocations[0].module_ids, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Allocator, ModelAndVendorConstraints) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("g2", {0, 1, 2, 3, 4, 5, 6, 7}, {}, "HL-225"));
  a.upsert_node(gaudi_node("g3", {0, 1, 2, 3, 4, 5, 6, 7}, {}, "HL-325L"));
  a.upsert_node(nvidia_node("nv", 8));
  PendingJob g3 = job("want-g3", 8, 1, 0, 1);
  g3.model = "HL-325L";
  PendingJob none = job("want-g1", 8, 1, 0, 2);
  none.model = "HL-205";
  PendingJob nv = job("want-nv", 2, 1, 0, 3);
  nv.vendor = api::Vendor::nvidia;
  PendingJob g2only = job("want-g2", 8, 1, 0, 4);
  g2only.model = "HL-225";
  g2only.vendor = api::Vendor::habana;
  auto r = a.schedule({g3, none, nv, g2only}, 0);
  EXPECT_EQ(find_placement(r, "want-g3")->allocations[0].node, "g3");
  EXPECT_EQ(find_placement(r, "want-nv")->allocations[0].node, "nv");
  EXPECT_EQ(find_placement(r, "want-g2")->allocations[0].node, "g2");
  EXPECT_EQ(reason(r, "want-g1"), "no node has 8 healthy HL-205 cards");

  PendingJob more = job("more-g2", 8, 1, 0, 5);
  more.model = "HL-225";
  auto r2 = a.schedule({more}, 0);
  EXPECT_EQ(reason(r2, "more-g2"), "waiting for 8 free HL-225 cards in one valid group");
}

// AMD Instinct (MI300X: one XGMI hive, every pair one hop): any subset is a valid group,
// and a job asking for amd lands on amd cards only.
TEST(Allocator, AmdTakesAnySubset) {
  ModuleGroupAllocator a;
  NodeSpec amd = testing::nvidia_node("mi", 8, "AMD Instinct MI300X");
  amd.vendor = api::Vendor::amd;
  a.upsert_node(amd);
  a.upsert_node(gaudi_node("g"));
  PendingJob one = job("one", 1, 1, 0, 1);
  one.vendor = api::Vendor::amd;
  auto r = a.schedule({one}, 0);
  ASSERT_EQ(find_placement(r, "one")->allocations[0].node, "mi");
  PendingJob two = job("two", 2, 1, 0, 2);
  two.vendor = api::Vendor::amd;
  auto r2 = a.schedule({two}, 0);
  const auto& al = find_placement(r2, "two")->allocations[0];
  EXPECT_EQ(al.node, "mi");
  EXPECT_EQ(al.module_ids, (std::vector<int>{1, 2}));  // Not a Gaudi pair: fine on AMD.
  EXPECT_EQ(al.indices, (std::vector<int>{1, 2}));
  EXPECT_EQ(a.free_groups("mi").at(1).size(), 5u);  // Placed jobs hold their cards.
}

TEST(Allocator, MooreThreadsTakesAnySubsetWithinOneNumaHalf) {
  ModuleGroupAllocator a;
  NodeSpec mt = testing::nvidia_node("mt", 8, "MTT S5000");
  mt.vendor = api::Vendor::mthreads;
  a.upsert_node(mt);
  auto place = [&](const std::string& id, int devices) {
    PendingJob j = job(id, devices, 1, 0, 1);
    j.vendor = api::Vendor::mthreads;
    auto r = a.schedule({j}, 0);
    const auto* p = find_placement(r, id);
    return p ? p->allocations[0].indices : std::vector<int>{};
  };
  EXPECT_EQ(place("pair", 2), (std::vector<int>{0, 1}));
  // Not 2,3,4,5 across the NUMA halves: the free half.
  EXPECT_EQ(place("quad", 4), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(place("one", 1), (std::vector<int>{2}));
  EXPECT_EQ(a.free_groups("mt").at(1).size(), 1u);
}

TEST(Allocator, CambriconTakesRingBlocksOnly) {
  ModuleGroupAllocator a;
  NodeSpec mlu = testing::nvidia_node("mlu", 8, "MLU370-X8");
  mlu.vendor = api::Vendor::cambricon;
  a.upsert_node(mlu);
  auto place = [&](const std::string& id, int devices) {
    PendingJob j = job(id, devices, 1, 0, 1);
    j.vendor = api::Vendor::cambricon;
    auto r = a.schedule({j}, 0);
    const auto* p = find_placement(r, id);
    return p ? p->allocations[0].indices : std::vector<int>{};
  };
  EXPECT_EQ(place("one", 1), (std::vector<int>{0}));
  EXPECT_EQ(place("pair", 2), (std::vector<int>{2, 3}));  // Not 1,2: no ring.
  EXPECT_EQ(place("quad", 4), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(place("three", 3), (std::vector<int>{}));  // 3 is never a valid size.
}

TEST(Allocator, SkipsUnschedulableNodes) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.set_schedulable("n1", false);
  auto r = a.schedule({job("j", 1), job("z", 0)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "j"), "no ready nodes");
  EXPECT_EQ(reason(r, "z"), "no ready nodes");
  a.set_schedulable("n1", true);
  EXPECT_EQ(a.schedule({job("j", 1)}, 0).placed.size(), 1u);
}

TEST(Allocator, GangAllOrNothingOnDistinctNodes) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("a"));
  a.upsert_node(gaudi_node("b"));
  a.hold("busy", {{"b", 0, {0}, {7}}}, std::nullopt);
  auto r = a.schedule({job("too-big", 8, 3, 0, 1), job("g8", 8, 2, 0, 2), job("g4", 4, 2, 0, 3)}, 0);
  EXPECT_EQ(reason(r, "too-big"), "unschedulable: cluster has 2 nodes");
  EXPECT_EQ(find_placement(r, "g8"), nullptr);
  EXPECT_EQ(reason(r, "g8"), "waiting for 8 free cards in one valid group on each of 2 nodes");
  // g8 blocks with a reservation on both nodes; g4 has no time limit, so it may not take reserved cards.
  EXPECT_EQ(reason(r, "g4"), "waiting behind reservation for job g8");
  EXPECT_EQ(a.holder("a", 0), std::nullopt);

  a.release("busy");
  auto r2 = a.schedule({job("g4", 4, 2)}, 0);
  const Placement* p = find_placement(r2, "g4");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->allocations.size(), 2u);
  EXPECT_NE(p->allocations[0].node, p->allocations[1].node);
  EXPECT_EQ(p->allocations[0].rank, 0);
  EXPECT_EQ(p->allocations[1].rank, 1);
}

TEST(Allocator, PriorityThenSubmissionOrder) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  auto r = a.schedule({job("old", 8, 1, 0, 1), job("urgent", 8, 1, 5, 2), job("older", 8, 1, 0, 0)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].job_id, "urgent");
  EXPECT_EQ(r.pending_reasons.size(), 2u);
}

TEST(Allocator, JobsWithoutCardsNeedOnlyANode) {
  ModuleGroupAllocator a;
  auto r0 = a.schedule({job("z", 0)}, 0);
  EXPECT_EQ(reason(r0, "z"), "no ready nodes");
  a.upsert_node(gaudi_node("n1"));
  a.hold("full", {{"n1", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, std::nullopt);
  auto r = a.schedule({job("z", 0), job("z2", 0, 2)}, 0);
  const Placement* p = find_placement(r, "z");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->allocations.at(0).node, "n1");
  EXPECT_TRUE(p->allocations[0].module_ids.empty());
  EXPECT_EQ(reason(r, "z2"), "unschedulable: cluster has 1 node");
  EXPECT_EQ(a.holdings().count("z"), 0u);

  a.upsert_node(gaudi_node("n2"));
  a.set_schedulable("n2", false);
  PendingJob nv = job("nv", 0);
  nv.vendor = api::Vendor::nvidia;
  auto r2 = a.schedule({job("z3", 0, 2), nv}, 0);
  EXPECT_EQ(reason(r2, "z3"), "only 1 ready nodes, job needs 2");
  EXPECT_EQ(reason(r2, "nv"), "no ready node has nvidia cards");
}

TEST(Allocator, NvidiaBestFitLowestIndices) {
  ModuleGroupAllocator a;
  a.upsert_node(nvidia_node("big", 8));
  a.upsert_node(nvidia_node("small", 4));
  a.hold("x", {{"small", 0, {1}, {1}}}, std::nullopt);
  auto r = a.schedule({job("j", 2)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].allocations[0].node, "small");
  EXPECT_EQ(r.placed[0].allocations[0].module_ids, (std::vector<int>{0, 2}));
  auto groups = a.free_groups("small");
  EXPECT_EQ(groups[1], (std::vector<api::Group>{{3}}));
}

TEST(Allocator, HoldConflictsAreRefused) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  ASSERT_TRUE(a.try_hold("a", {{"n1", 0, {0, 1}, {7, 6}}}, 1000).ok());
  Status s = a.try_hold("b", {{"n1", 0, {1, 2}, {6, 5}}}, std::nullopt);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("held by job a"), std::string::npos);
  EXPECT_EQ(a.holder("n1", 2), std::nullopt);  // Nothing of b was held.
  EXPECT_FALSE(a.try_hold("b", {{"n1", 0, {40}, {0}}}, std::nullopt).ok());
}

TEST(Allocator, HoldsSurviveUpsertAndUnknownNodes) {
  ModuleGroupAllocator a;
  a.hold("early", {{"later", 0, {4, 5}, {1, 0}}}, std::nullopt);
  EXPECT_TRUE(a.has_node("later"));
  a.upsert_node(gaudi_node("later"));
  EXPECT_EQ(a.holder("later", 4), "early");
  auto r = a.schedule({job("q", 4), job("p", 2)}, 0);
  EXPECT_EQ(find_placement(r, "q")->allocations[0].module_ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(find_placement(r, "p")->allocations[0].module_ids, (std::vector<int>{6, 7}));
}

TEST(Allocator, ReleaseOnNodeFreesOnlyThatNode) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("a"));
  a.upsert_node(gaudi_node("b"));
  auto r = a.schedule({job("g", 8, 2)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  a.set_schedulable("b", false);
  a.release_on_node("g", "b");
  EXPECT_EQ(a.holder("a", 0), "g");
  EXPECT_EQ(a.holder("b", 0), std::nullopt);
  EXPECT_EQ(a.holdings().at("g").size(), 1u);
  a.release("g");
  EXPECT_TRUE(a.holdings().empty());
  EXPECT_EQ(a.free_groups("a").at(8).size(), 1u);
}

TEST(Allocator, FreeGroupsByModuleId) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1", {0, 1, 2, 3, 4, 5, 6, 7}, {6}));
  a.hold("x", {{"n1", 0, {0}, {7}}}, std::nullopt);
  auto g = a.free_groups("n1");
  EXPECT_EQ(g[2], (std::vector<api::Group>{{2, 3}, {4, 5}}));
  EXPECT_EQ(g[4], (std::vector<api::Group>{}));
  EXPECT_EQ(g.count(8), 0u);
  EXPECT_EQ(g[1].size(), 6u);
}

TEST(Allocator, InvalidRequestsAndDuplicates) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.hold("held", {{"n1", 0, {0}, {7}}}, std::nullopt);
  auto r = a.schedule(
      {job("three", 3), job("many", 33), job("none", 1, 0), job("held", 1), job("d", 1, 1, 0, 1), job("d", 1, 1, 0, 2)},
      0);
  // 3 cards: a size Gaudi boards cannot hold (any subset, an Inferentia ring can).
  EXPECT_EQ(reason(r, "three"), "no node has 3 healthy cards in one valid group");
  EXPECT_NE(reason(r, "many").find("must be 0 to 32"), std::string::npos);
  EXPECT_NE(reason(r, "none").find("nodes"), std::string::npos);
  EXPECT_NE(reason(r, "held").find("already holds"), std::string::npos);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].job_id, "d");
}

TEST(Allocator, OfTwoEntriesWithOneIdTheOneThatRunsFirstStands) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  // The later entry has the higher priority: it is the one scheduled (8 cards), the
  // earlier one (4 cards) gets neither a placement nor a reason.
  auto r = a.schedule({job("d", 4, 1, 0, 1), job("x", 1, 1, 0, 2), job("d", 8, 1, 5, 3)}, 0);
  ASSERT_NE(find_placement(r, "d"), nullptr);
  EXPECT_EQ(find_placement(r, "d")->allocations[0].module_ids.size(), 8u);
  EXPECT_EQ(find_placement(r, "x"), nullptr);
  EXPECT_EQ(r.pending_reasons.size(), 1u);  // x only.
  EXPECT_EQ(r.order, (std::vector<uint32_t>{2, 0, 1}));
}

TEST(Allocator, EntriesEqualInEverythingButIdRunInIdOrder) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  auto r = a.schedule({job("c", 8, 1, 0, 7), job("a", 8, 1, 0, 7), job("b", 8, 1, 0, 7)}, 0);
  EXPECT_EQ(r.order, (std::vector<uint32_t>{1, 2, 0}));
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].job_id, "a");
}

TEST(Allocator, ANotANumberFairShareSortsAsZeroAndBreaksNothing) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  std::vector<PendingJob> q;
  for (int i = 0; i < 200; ++i) {
    q.push_back(job("j" + std::to_string(i), 1, 1, 0, i));
    q.back().fair_share = i % 3 == 0 ? std::nan("") : (i % 3 == 1 ? 0.5 : -0.5);
  }
  auto r = a.schedule(q, 0);
  ASSERT_EQ(r.placed.size(), 8u);
  for (const auto& p : r.placed) EXPECT_EQ(q[std::stoul(p.job_id.substr(1))].fair_share, 0.5) << p.job_id;
  // 67 of 0.5, then 67 NaN (as 0), then 66 of -0.5.
  ASSERT_EQ(r.order.size(), 200u);
  EXPECT_EQ(q[r.order[66]].fair_share, 0.5);
  EXPECT_TRUE(std::isnan(q[r.order[67]].fair_share));
  EXPECT_TRUE(std::isnan(q[r.order[133]].fair_share));
  EXPECT_EQ(q[r.order[134]].fair_share, -0.5);
}

TEST(Allocator, PassesOfGrowingAndShrinkingQueuesReuseTheirScratchCorrectly) {
  ModuleGroupAllocator a;
  for (int i = 0; i < 4; ++i) a.upsert_node(gaudi_node("n" + std::to_string(i)));
  for (int n : {5000, 3, 0, 1200, 7}) {
    std::vector<PendingJob> q;
    for (int i = 0; i < n; ++i) q.push_back(job("j" + std::to_string(i % 1000), 8, 1, i % 4, i));
    auto r = a.schedule(q, 0);
    const size_t distinct = static_cast<size_t>(std::min(n, 1000));
    EXPECT_EQ(r.placed.size(), std::min<size_t>(distinct, 4)) << n;
    EXPECT_EQ(r.placed.size() + r.pending_reasons.size(), distinct) << n;
    for (const auto& p : r.placed) a.release(p.job_id);
  }
}

TEST(Allocator, ManyBlockedJobsGetReasons) {
  ModuleGroupAllocator a;
  for (int i = 0; i < 50; ++i) a.upsert_node(gaudi_node("n" + std::to_string(i)));
  std::vector<PendingJob> q;
  for (int i = 0; i < 5000; ++i) q.push_back(job("j" + std::to_string(i), 8, 1, 0, i));
  auto r = a.schedule(q, 0);
  EXPECT_EQ(r.placed.size(), 50u);
  EXPECT_EQ(r.pending_reasons.size(), 4950u);
  EXPECT_EQ(reason(r, "j4999"), "waiting for 8 free cards in one valid group");
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].job_id, "j50");
  EXPECT_EQ(r.reservations[0].start_ms, std::nullopt);
}

}  // namespace
}  // namespace tessel::scheduler

namespace tessel::scheduler {
namespace {

NodeSpec neuron_node(const std::string& name, int devices, std::set<int> unhealthy = {}) {
  NodeSpec n;
  n.name = name;
  n.vendor = api::Vendor::neuron;
  for (int i = 0; i < devices; ++i) n.cards.push_back({i, i, "trn2", unhealthy.count(i) == 0});
  return n;
}

TEST(Allocator, NeuronTakesAlignedBlocksBestFit) {
  ModuleGroupAllocator a;
  a.upsert_node(neuron_node("t", 16));
  auto r = a.schedule({testing::job("one", 1, 1, 0, 1), testing::job("four", 4, 1, 0, 2),
                       testing::job("eight", 8, 1, 0, 3), testing::job("two", 2, 1, 0, 4)},
                      0);
  // The single device and the quad share the first octet; the octet takes the second.
  EXPECT_EQ(testing::find_placement(r, "one")->allocations[0].module_ids, (std::vector<int>{0}));
  EXPECT_EQ(testing::find_placement(r, "four")->allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(testing::find_placement(r, "eight")->allocations[0].module_ids,
            (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(testing::find_placement(r, "two"), nullptr);  // Not a Trainium group size.
  EXPECT_NE(testing::reason(r, "two").find("no node has 2 healthy"), std::string::npos) << testing::reason(r, "two");
  auto free = a.free_groups("t");
  EXPECT_EQ(free[1], (std::vector<api::Group>{{1}, {2}, {3}}));
  EXPECT_EQ(free.count(4), 0u);
}

TEST(Allocator, NeuronSixteenNeedsTheWholeHealthyNode) {
  ModuleGroupAllocator a;
  a.upsert_node(neuron_node("sick", 16, {9}));
  a.upsert_node(neuron_node("small", 4));
  a.upsert_node(neuron_node("whole", 16));
  auto r = a.schedule({testing::job("all", 16)}, 0);
  ASSERT_NE(testing::find_placement(r, "all"), nullptr) << testing::reason(r, "all");
  EXPECT_EQ(testing::find_placement(r, "all")->allocations[0].node, "whole");
  EXPECT_EQ(testing::find_placement(r, "all")->allocations[0].module_ids.size(), 16u);
  // Devices 16 and up are never placed: Neuron groups live in 0..15.
  ModuleGroupAllocator b;
  b.upsert_node(neuron_node("big", 32));
  auto r2 = b.schedule({testing::job("x", 16, 1, 0, 1), testing::job("y", 16, 1, 0, 2)}, 0);
  ASSERT_NE(testing::find_placement(r2, "x"), nullptr);
  EXPECT_EQ(testing::find_placement(r2, "x")->allocations[0].module_ids.back(), 15);
  EXPECT_EQ(testing::find_placement(r2, "y"), nullptr);
}

NodeSpec inferentia_node(const std::string& name, int devices, std::set<int> unhealthy = {}) {
  NodeSpec n = neuron_node(name, devices, std::move(unhealthy));
  for (auto& c : n.cards) c.model = "inf2";
  return n;
}

// Inf2 (a ring): any count of adjacent devices, 12 on an inf2.48xlarge, best fit first.
TEST(Allocator, InferentiaTakesAdjacentDevicesBestFit) {
  ModuleGroupAllocator a;
  a.upsert_node(inferentia_node("inf", 12, {5}));  // Runs 0-4 and 6-11.
  auto r = a.schedule({testing::job("three", 3, 1, 0, 1), testing::job("six", 6, 1, 0, 2)}, 0);
  // Three fills the run of 5; six takes the run of 6 whole.
  EXPECT_EQ(testing::find_placement(r, "three")->allocations[0].module_ids, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(testing::find_placement(r, "six")->allocations[0].module_ids, (std::vector<int>{6, 7, 8, 9, 10, 11}));
  auto free = a.free_groups("inf");
  EXPECT_EQ(free[2], (std::vector<api::Group>{{3, 4}}));
  auto r2 = a.schedule({testing::job("three-more", 3, 1, 0, 3)}, 0);
  EXPECT_EQ(testing::find_placement(r2, "three-more"), nullptr);
  EXPECT_EQ(testing::reason(r2, "three-more"), "waiting for 3 free cards in one valid group");

  ModuleGroupAllocator b;
  b.upsert_node(inferentia_node("whole", 12));
  b.upsert_node(neuron_node("trn", 16));
  auto r3 = b.schedule({testing::job("twelve", 12, 1, 0, 1)}, 0);
  ASSERT_NE(testing::find_placement(r3, "twelve"), nullptr) << testing::reason(r3, "twelve");
  EXPECT_EQ(testing::find_placement(r3, "twelve")->allocations[0].node, "whole");  // Not a Trainium size.
}

// NVIDIA takes any count, 3 GPUs included, on its lowest free indices.
TEST(Allocator, AnySubsetTakesAnyCount) {
  ModuleGroupAllocator a;
  a.upsert_node(testing::nvidia_node("gpu", 8, "H100"));
  a.upsert_node(testing::gaudi_node("g"));
  auto r = a.schedule({testing::job("three", 3, 1, 0, 1), testing::job("five", 5, 1, 0, 2)}, 0);
  EXPECT_EQ(testing::find_placement(r, "three")->allocations[0].module_ids, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(testing::find_placement(r, "five")->allocations[0].module_ids, (std::vector<int>{3, 4, 5, 6, 7}));
}

TEST(Allocator, SixteenNeverFitsAGaudiNode) {
  ModuleGroupAllocator a;
  a.upsert_node(testing::gaudi_node("g"));
  auto r = a.schedule({testing::job("x", 16)}, 0);
  EXPECT_EQ(testing::find_placement(r, "x"), nullptr);
  EXPECT_NE(testing::reason(r, "x").find("no node has 16"), std::string::npos) << testing::reason(r, "x");
}

}  // namespace
}  // namespace tessel::scheduler
