// Unit tests of CPU and memory placement: a node fits a job only where a valid card
// group AND its CPUs AND its memory are free; defaults are the node's share for the
// cards asked; reasons name what is short; backfill respects reserved CPUs.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace tessel::scheduler {
namespace {

using testing::find_placement;
using testing::gaudi_node;
using testing::job;
using testing::reason;

// An 8-card Gaudi node with `cpus` CPUs and `memory_mib` of memory.
NodeSpec sized(const std::string& name, int cpus, int64_t memory_mib) {
  NodeSpec n = gaudi_node(name);
  n.cpus = cpus;
  n.memory_mib = memory_mib;
  return n;
}

PendingJob asking(const std::string& id, int devices, int cpus, int64_t memory_mib = 0, int nodes = 1) {
  PendingJob j = job(id, devices, nodes);
  j.cpus = cpus;
  j.memory_mib = memory_mib;
  return j;
}

TEST(Resources, DefaultIsTheNodesShareForTheCardsAsked) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 64, 8 * 1024));
  auto r = a.schedule({job("two", 2)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  const api::Allocation& al = r.placed[0].allocations.at(0);
  EXPECT_EQ(al.cpus, 16);  // 64 CPUs x 2 cards / 8 cards.
  EXPECT_EQ(al.memory_mib, 2048);
  auto res = a.resources("n1");
  EXPECT_EQ(res.cpus_used, 16);
  EXPECT_EQ(res.memory_used, 2048);
  a.release("two");
  EXPECT_EQ(a.resources("n1").cpus_used, 0);
  EXPECT_EQ(a.resources("n1").memory_used, 0);
}

TEST(Resources, ANodeWithFewerCpusThanCardsGivesNoCpuShare) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 4, 1024));
  std::vector<PendingJob> eight;
  for (int i = 0; i < 8; ++i) eight.push_back(job("one" + std::to_string(i), 1));
  auto r = a.schedule(eight, 0);
  ASSERT_EQ(r.placed.size(), 8u);  // Every card is used: CPUs do not stand in the way.
  EXPECT_EQ(r.placed[0].allocations[0].cpus, 0);
  EXPECT_EQ(r.placed[0].allocations[0].memory_mib, 128);  // Memory is shared out as usual.
  EXPECT_EQ(a.resources("n1").cpus_used, 0);
}

TEST(Resources, NodesThatReportNothingCountNothing) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("old"));  // An agent that predates isolation.
  auto r = a.schedule({job("d", 2), asking("c", 1, 500)}, 0);
  ASSERT_EQ(r.placed.size(), 2u);
  EXPECT_EQ(find_placement(r, "d")->allocations[0].cpus, 0);
  EXPECT_EQ(find_placement(r, "c")->allocations[0].cpus, 500);  // The ask reaches the agent as it is.
}

TEST(Resources, CardsFreeButCpusTakenWaitsWithAReasonNamingTheNode) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 8, 65536));
  auto r1 = a.schedule({asking("hog", 1, 6)}, 0);
  ASSERT_EQ(r1.placed.size(), 1u);
  auto r2 = a.schedule({asking("late", 1, 4)}, 0);
  EXPECT_TRUE(r2.placed.empty());
  EXPECT_EQ(reason(r2, "late"), "waiting for CPUs (n1: 6 of 8 CPUs in use, job needs 4)");
  // Two CPUs are left: a job asking two fits.
  auto r3 = a.schedule({asking("small", 1, 2)}, 0);
  ASSERT_EQ(r3.placed.size(), 1u);
  a.release("hog");
  EXPECT_EQ(a.schedule({asking("late", 1, 4)}, 0).placed.size(), 1u);
}

TEST(Resources, MemoryIsCountedLikeCpus) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 64, 32768));
  ASSERT_EQ(a.schedule({asking("big", 1, 0, 30720)}, 0).placed.size(), 1u);
  auto r = a.schedule({asking("more", 1, 0, 4096)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "more"), "waiting for memory (n1: 30720 of 32768 MiB of memory in use, job needs 4096 MiB)");
}

TEST(Resources, PicksANodeWithTheCpusWhenTheBestCardFitLacksThem) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("busy", 8, 65536));
  a.upsert_node(sized("idle", 8, 65536));
  // "busy" is the most used node (the best card fit) but has no CPUs left.
  ASSERT_EQ(a.schedule({asking("hog", 1, 8)}, 0).placed.size(), 1u);
  const std::string hog_node = a.holder("busy", 0) ? "busy" : "idle";
  auto r = a.schedule({asking("next", 1, 2)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_NE(r.placed[0].allocations[0].node, hog_node);
}

TEST(Resources, MoreCpusThanAnyNodeHasNeverFitsAndSaysSo) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 32, 65536));
  a.upsert_node(sized("n2", 16, 65536));
  auto r = a.schedule({asking("huge", 1, 64)}, 0);
  EXPECT_TRUE(r.placed.empty());
  EXPECT_EQ(reason(r, "huge"), "no node can hold 64 CPUs per node (at most 32 CPUs, 65536 MiB)");
  auto g = a.schedule({asking("gang", 1, 20, 0, 2)}, 0);
  EXPECT_EQ(reason(g, "gang"), "only 1 node can hold 20 CPUs per node (at most 32 CPUs, 65536 MiB), job needs 2");
  auto m = a.schedule({asking("mem", 0, 1, 100000)}, 0);
  EXPECT_EQ(reason(m, "mem"), "no node can hold 1 CPU and 100000 MiB of memory per node (at most 32 CPUs, 65536 MiB)");
}

TEST(Resources, JobsWithoutCardsTakeTheirCpusAndWait) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 4, 8192));
  auto r = a.schedule({asking("c1", 0, 3, 1024), asking("c2", 0, 3, 1024)}, 0);
  ASSERT_EQ(r.placed.size(), 1u);
  EXPECT_EQ(r.placed[0].allocations[0].cpus, 3);
  EXPECT_EQ(reason(r, "c2"), "waiting for CPUs (n1: 3 of 4 CPUs in use, job needs 3)");
  EXPECT_TRUE(a.holdings().empty());  // Holdings list cards; the CPU-only job holds none.
  EXPECT_EQ(a.resources("n1").cpus_used, 3);
  a.release(r.placed[0].job_id);
  EXPECT_EQ(a.schedule({asking("c2", 0, 3, 1024)}, 0).placed.size(), 1u);
}

TEST(Resources, HoldsRestoredFromAllocationsCountAndAreReleased) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 8, 8192));
  api::Allocation al{"n1", 0, {0}, {7}, 6, 4096};
  a.hold("restored", {al}, std::nullopt);
  EXPECT_EQ(a.resources("n1").cpus_used, 6);
  api::Allocation cpu_only{"n1", 0, {}, {}, 1, 0};
  a.hold("cpu-only", {cpu_only}, std::nullopt);
  EXPECT_EQ(a.resources("n1").cpus_used, 7);
  a.hold("restored", {al}, std::nullopt);  // Holding again adds nothing.
  EXPECT_EQ(a.resources("n1").cpus_used, 7);
  EXPECT_EQ(reason(a.schedule({asking("x", 1, 2)}, 0), "x"), "waiting for CPUs (n1: 7 of 8 CPUs in use, job needs 2)");
  a.release("restored");
  a.release("cpu-only");
  EXPECT_EQ(a.resources("n1").cpus_used, 0);
  EXPECT_EQ(a.resources("n1").memory_used, 0);
}

TEST(Resources, ABlockedJobReservesItsCpusAndBackfillOnlyUsesThemWhenItEndsFirst) {
  ModuleGroupAllocator a;
  a.upsert_node(sized("n1", 8, 65536));
  // 6 CPUs held for 100 s: the 4-CPU job waits and reserves the node's CPUs from then.
  ASSERT_EQ(a.schedule({[] {
                         PendingJob j = asking("hog", 1, 6);
                         j.time_limit_s = 100;
                         return j;
                       }()},
                       0)
                .placed.size(),
            1u);
  PendingJob head = asking("head", 1, 4, 0);
  head.priority = 10;
  PendingJob long_small = asking("long", 1, 2);  // No time limit: would delay the head.
  PendingJob short_small = asking("short", 1, 2);
  short_small.time_limit_s = 50;  // Ends before the hog does.
  auto r = a.schedule({head, long_small, short_small}, 0);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].job_id, "head");
  ASSERT_TRUE(r.reservations[0].start_ms.has_value());
  EXPECT_EQ(*r.reservations[0].start_ms, 100'000);
  EXPECT_EQ(r.reservations[0].allocations.at(0).cpus, 4);
  EXPECT_EQ(find_placement(r, "long"), nullptr);
  ASSERT_NE(find_placement(r, "short"), nullptr);
}

}  // namespace
}  // namespace tessel::scheduler
