// The preemption policy (ModuleGroupAllocator::plan_preemption): fewest victims,
// whole gangs, newest first, the minimum runtime, guarantees only; and a seeded
// property test against a brute-force oracle (every set of eligible victims,
// smallest first, tried by releasing it in a copy of the cluster and scheduling).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "tessel/api/topology.hpp"
#include "test_helpers.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kMin = 60'000;  // Minimum runtime in these tests.
constexpr int64_t kNow = 1'000'000;

// An aligned block of 1, 2, 4 or 8 module ids within 0..7.
bool valid_gaudi_group(const std::vector<int>& mods) {
  const auto& groups = api::gaudi_groups_of_size(static_cast<int>(mods.size()));
  return std::find(groups.begin(), groups.end(), mods) != groups.end();
}

api::Allocation cards_on(const std::string& node, std::vector<int> modules, int rank = 0) {
  api::Allocation a;
  a.node = node;
  a.rank = rank;
  a.module_ids = modules;
  for (int m : modules) a.indices.push_back(7 - m);
  return a;
}

// Projects: 0 "vision" guaranteed 8 HL-225 cards, holding none; 1 "nlp" guaranteed 4.
std::vector<ProjectLimits> two_projects() {
  ProjectLimits vision, nlp;
  vision.name = "vision";
  vision.guaranteed["HL-225"] = 8;
  nlp.name = "nlp";
  nlp.guaranteed["HL-225"] = 4;
  return {vision, nlp};
}

PendingJob wants(int devices, int nodes = 1, int32_t project = 0) {
  PendingJob j = job("j-want", devices, nodes);
  j.project = project;
  j.model = "HL-225";
  return j;
}

struct Fixture {
  ModuleGroupAllocator alloc;
  std::vector<RunningJob> running;
  std::vector<ProjectLimits> limits = two_projects();

  void node(const std::string& name) { alloc.upsert_node(gaudi_node(name)); }
  // A running job of `project` (-1: one without quotas) started at `started`.
  void run(const std::string& id, std::vector<api::Allocation> allocs, int64_t started, int32_t project = -1,
           bool preemptible = true) {
    alloc.hold(id, allocs, std::nullopt);
    running.push_back(RunningJob{id, project, preemptible, started});
    if (project < 0) return;
    for (const auto& a : allocs) {
      limits[static_cast<size_t>(project)].held["HL-225"] += static_cast<int64_t>(a.module_ids.size());
      limits[static_cast<size_t>(project)].held["*"] += static_cast<int64_t>(a.module_ids.size());
    }
  }
  PreemptionOutcome plan(const PendingJob& j, int64_t now = kNow) {
    return alloc.plan_preemption(PreemptionRequest{&j, running, &limits, now, kMin});
  }
};

TEST(Preemption, NoPlanWhenTheJobFitsNow) {
  Fixture f;
  f.node("n1");
  f.node("n2");
  f.run("j-b", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, 1);
  EXPECT_FALSE(f.plan(wants(8)).plan);  // n2 is free.
}

TEST(Preemption, FewestVictimsFreeOneValidGroup) {
  Fixture f;
  f.node("n1");
  f.node("n2");
  for (int m = 0; m < 8; ++m) f.run("j-one" + std::to_string(m), {cards_on("n1", {m})}, 1000 + m);
  f.run("j-eight", {cards_on("n2", {0, 1, 2, 3, 4, 5, 6, 7})}, 1);  // Oldest, yet one victim beats eight.
  auto out = f.plan(wants(8));
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-eight"});
  ASSERT_EQ(out.plan->allocations.size(), 1u);
  EXPECT_EQ(out.plan->allocations[0].node, "n2");
  // Two cards: still j-eight alone, rather than two singles.
  EXPECT_EQ(f.plan(wants(2)).plan->victims, std::vector<std::string>{"j-eight"});
  // With singles only, one frees nothing valid (pairs are 0-1, 2-3, ...): two, the newest pair.
  Fixture g;
  g.node("n1");
  for (int m = 0; m < 8; ++m) g.run("j-one" + std::to_string(m), {cards_on("n1", {m})}, 1000 + m);
  auto two = g.plan(wants(2));
  ASSERT_TRUE(two.plan);
  EXPECT_EQ(two.plan->victims, (std::vector<std::string>{"j-one7", "j-one6"}));
  EXPECT_EQ(two.plan->allocations[0].module_ids, (std::vector<int>{6, 7}));
}

TEST(Preemption, AGangIsOneVictimAndGivesUpAllItsNodes) {
  Fixture f;
  for (const char* n : {"n1", "n2", "n3"}) f.node(n);
  f.run("j-gang", {cards_on("n1", {0, 1, 2, 3}, 0), cards_on("n2", {0, 1, 2, 3}, 1)}, 5000);
  f.run("j-s1", {cards_on("n1", {4, 5, 6, 7})}, 9000);
  f.run("j-s2", {cards_on("n2", {4, 5, 6, 7})}, 9000);
  f.run("j-s3", {cards_on("n3", {0, 1, 2, 3, 4, 5, 6, 7})}, 9000);
  // Two nodes of 4: stopping the gang alone frees a quad on n1 and on n2.
  auto out = f.plan(wants(4, 2));
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-gang"});
  ASSERT_EQ(out.plan->allocations.size(), 2u);
  std::set<std::string> nodes;
  for (const auto& a : out.plan->allocations) {
    nodes.insert(a.node);
    EXPECT_EQ(a.module_ids, (std::vector<int>{0, 1, 2, 3}));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(out.plan->allocations[1].rank, 1);
}

TEST(Preemption, AGangWithManyCandidatesGetsAMinimalSetOfTheNewest) {
  Fixture f;
  for (const char* n : {"n1", "n2", "n3"}) f.node(n);
  f.limits[0].guaranteed["HL-225"] = 16;
  // 24 single-card jobs (past the exact search's 12): n3's are the newest, then n2's.
  for (int i = 0; i < 24; ++i) {
    const std::string node = "n" + std::to_string(1 + i / 8);
    f.run("j-" + std::to_string(i), {cards_on(node, {i % 8})}, 1000 + i);
  }
  auto out = f.plan(wants(8, 2));
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims.size(), 16u);
  std::set<std::string> victims(out.plan->victims.begin(), out.plan->victims.end());
  for (int i = 8; i < 24; ++i) EXPECT_TRUE(victims.count("j-" + std::to_string(i))) << i;
  ASSERT_EQ(out.plan->allocations.size(), 2u);
  EXPECT_NE(out.plan->allocations[0].node, out.plan->allocations[1].node);
  for (const auto& a : out.plan->allocations) EXPECT_NE(a.node, "n1");
  // 4 cards on two nodes: after pruning, 8 victims (a quad on each of two nodes), valid quads.
  auto quads = f.plan(wants(4, 2));
  ASSERT_TRUE(quads.plan);
  EXPECT_EQ(quads.plan->victims.size(), 8u);
  for (const auto& a : quads.plan->allocations) EXPECT_TRUE(valid_gaudi_group(a.module_ids));
}

TEST(Preemption, NewestStartedFirstAmongEquals) {
  Fixture f;
  f.node("n1");
  f.node("n2");
  f.run("j-old", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, 1000);
  f.run("j-new", {cards_on("n2", {0, 1, 2, 3, 4, 5, 6, 7})}, 2000);
  auto out = f.plan(wants(8));
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-new"});
}

TEST(Preemption, NeverAJobRunningLessThanTheMinimumRuntime) {
  Fixture f;
  f.node("n1");
  f.node("n2");
  f.run("j-old", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, kNow - 2 * kMin);
  f.run("j-young", {cards_on("n2", {0, 1, 2, 3, 4, 5, 6, 7})}, kNow - kMin / 2);
  auto out = f.plan(wants(8));
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-old"});  // Though j-young is newer.
  // With only young ones: no plan, and when to ask again.
  Fixture g;
  g.node("n1");
  g.run("j-young", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, kNow - kMin / 2);
  auto none = g.plan(wants(8));
  EXPECT_FALSE(none.plan);
  ASSERT_TRUE(none.retry_at_ms);
  EXPECT_EQ(*none.retry_at_ms, kNow + kMin / 2);
  EXPECT_TRUE(g.plan(wants(8), kNow + kMin / 2).plan);
  // A job not yet started (assigned) is never a victim.
  Fixture h;
  h.node("n1");
  h.run("j-assigned", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, 0);
  EXPECT_FALSE(h.plan(wants(8)).plan);
}

TEST(Preemption, OnlyForAJobWithinItsGuaranteeAndOnlyBorrowedCards) {
  Fixture f;
  f.node("n1");
  f.run("j-b", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, 1);
  EXPECT_TRUE(f.plan(wants(8)).plan);
  // Outside the guarantee: vision already holds 4 elsewhere (4 + 8 > 8).
  f.limits[0].held["HL-225"] = 4;
  EXPECT_FALSE(f.plan(wants(8)).plan);
  EXPECT_TRUE(f.plan(wants(4)).plan);
  // A project without a guarantee, or no project limits at all: never.
  f.limits[0].held["HL-225"] = 0;
  EXPECT_FALSE(f.plan(wants(8, 1, /*project=*/-1)).plan);
  f.limits[0].guaranteed.clear();
  EXPECT_FALSE(f.plan(wants(8)).plan);

  // Not preemptible, or of the same project: never victims.
  Fixture g;
  g.node("n1");
  g.node("n2");
  g.run("j-fixed", {cards_on("n1", {0, 1, 2, 3, 4, 5, 6, 7})}, 1, -1, /*preemptible=*/false);
  g.run("j-mine", {cards_on("n2", {0, 1, 2, 3, 4, 5, 6, 7})}, 1, /*project=*/0);
  g.limits[0].guaranteed["HL-225"] = 16;
  EXPECT_FALSE(g.plan(wants(8)).plan);

  // A project at or below its guarantee is not borrowing: nlp holds 8 with 4
  // guaranteed, so one 4-card job of it may go, not both.
  Fixture h;
  h.node("n1");
  h.run("j-nlp1", {cards_on("n1", {0, 1, 2, 3})}, 1000, /*project=*/1);
  h.run("j-nlp2", {cards_on("n1", {4, 5, 6, 7})}, 2000, /*project=*/1);
  auto four = h.plan(wants(4));
  ASSERT_TRUE(four.plan);
  EXPECT_EQ(four.plan->victims, std::vector<std::string>{"j-nlp2"});
  EXPECT_FALSE(h.plan(wants(8)).plan);
}

TEST(Preemption, FencesAndOtherHoldersBlockTheirCards) {
  Fixture f;
  f.node("n1");
  f.alloc.hold("j-x.0.0", {cards_on("n1", {0, 1, 2, 3})}, std::nullopt);  // A fence: not a running job.
  f.run("j-b", {cards_on("n1", {4, 5, 6, 7})}, 1);
  EXPECT_FALSE(f.plan(wants(8)).plan);
  auto four = f.plan(wants(4));
  ASSERT_TRUE(four.plan);
  EXPECT_EQ(four.plan->allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
}

// Preemption plans CPUs and memory too (issue 28): victims are chosen where the job's
// CPUs and memory are there once they are gone, never on a node it would overcommit.
TEST(Preemption, VictimsFreeTheCpusAndMemoryTheJobNeedsToo) {
  Fixture f;
  for (const char* name : {"n1", "n2"}) {
    NodeSpec n = gaudi_node(name);
    n.cpus = 16;
    n.memory_mib = 65536;
    f.alloc.upsert_node(n);
  }
  auto with = [](api::Allocation a, int cpus, int64_t memory_mib) {
    a.cpus = cpus;
    a.memory_mib = memory_mib;
    return a;
  };
  // n1: a job that may not be preempted holds 12 of its CPUs; the newest jobs hold 2 each.
  f.run("j-hog", {with(cards_on("n1", {0, 1}), 12, 8192)}, 1, -1, /*preemptible=*/false);
  f.run("j-new1", {with(cards_on("n1", {2, 3}), 2, 1024)}, 9000);
  f.run("j-new2", {with(cards_on("n1", {4, 5, 6, 7}), 2, 1024)}, 8000);
  // n2: the oldest job holds it all.
  f.run("j-old", {with(cards_on("n2", {0, 1, 2, 3, 4, 5, 6, 7}), 16, 8192)}, 1000);

  // By cards alone j-new1 (newest, one victim) would do; n1 would then have 2 free CPUs.
  PendingJob needs_cpus = wants(2);
  needs_cpus.cpus = 8;
  auto out = f.plan(needs_cpus);
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-old"});
  ASSERT_EQ(out.plan->allocations.size(), 1u);
  EXPECT_EQ(out.plan->allocations[0].node, "n2");
  EXPECT_EQ(out.plan->allocations[0].cpus, 8);
  // A job asking as little as the newest frees takes that one.
  PendingJob small = wants(2);
  small.cpus = 2;
  out = f.plan(small);
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-new1"});
  // Memory likewise: 60 GiB is only there on n2 once j-old is gone.
  PendingJob needs_memory = wants(2);
  needs_memory.cpus = 1;
  needs_memory.memory_mib = 61440;
  out = f.plan(needs_memory);
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-old"});
  // A gang of two 2-card ranks with 8 CPUs each: n2 can give one, n1 none.
  PendingJob gang = wants(2, 2);
  gang.cpus = 8;
  EXPECT_FALSE(f.plan(gang).plan);
  // Cards free but CPUs short is not "fits now": a victim makes room.
  Fixture g;
  NodeSpec n = gaudi_node("n1");
  n.cpus = 8;
  g.alloc.upsert_node(n);
  g.run("j-cpus", {with(cards_on("n1", {0, 1}), 8, 0)}, 1000);
  PendingJob two = wants(2);
  two.cpus = 4;
  out = g.plan(two);
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-cpus"});
}

// --- Property: the plan is valid and as small as the smallest set that works. ---

struct RandomCluster {
  std::vector<std::string> nodes;
  struct Held {
    std::string id;
    std::vector<api::Allocation> allocs;
    RunningJob job;
  };
  std::vector<Held> held;
};

RandomCluster random_cluster(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomCluster c;
  const int nodes = pick(1, 4);
  for (int i = 0; i < nodes; ++i) c.nodes.push_back("n" + std::to_string(i));
  // Fill cards with random groups; some gangs over two nodes.
  std::map<std::string, uint32_t> used;
  const int jobs = pick(1, 9);
  for (int j = 0; j < jobs; ++j) {
    const int size = 1 << pick(0, 3);
    const int span = nodes > 1 && pick(0, 3) == 0 ? 2 : 1;
    std::vector<api::Allocation> allocs;
    std::vector<std::string> order = c.nodes;
    std::shuffle(order.begin(), order.end(), rng);
    for (const auto& n : order) {
      if (static_cast<int>(allocs.size()) == span) break;
      for (int start = 0; start < 8; start += size) {
        const uint32_t mask = ((1u << size) - 1) << start;
        if ((used[n] & mask) != 0) continue;
        used[n] |= mask;
        std::vector<int> mods;
        for (int m = start; m < start + size; ++m) mods.push_back(m);
        allocs.push_back(cards_on(n, mods, static_cast<int>(allocs.size())));
        break;
      }
    }
    if (static_cast<int>(allocs.size()) != span) {
      for (const auto& a : allocs)
        for (int m : a.module_ids) used[a.node] &= ~(1u << m);
      continue;
    }
    const std::string id = "j-" + std::to_string(j);
    const int64_t started = pick(0, 3) == 0 ? kNow - kMin / 2 : kNow - kMin - pick(0, 5) * 1000;
    const int32_t project = pick(0, 2) == 0 ? 1 : -1;
    c.held.push_back(RandomCluster::Held{id, allocs, RunningJob{id, project, pick(0, 4) != 0, started}});
  }
  return c;
}

// Whether `job` can be placed once `victims` are gone (a fresh allocator).
bool fits_without(const RandomCluster& c, const std::set<std::string>& victims, const PendingJob& job) {
  ModuleGroupAllocator a;
  for (const auto& n : c.nodes) a.upsert_node(gaudi_node(n));
  for (const auto& h : c.held)
    if (!victims.count(h.id)) a.hold(h.id, h.allocs, std::nullopt);
  PendingJob plain = job;
  plain.project = -1;
  return !a.schedule({plain}, kNow).placed.empty();
}

TEST(PreemptionProperty, PlansAreValidAndAsSmallAsTheSmallestSetThatWorks) {
  std::mt19937 rng(20261201);
  int planned = 0;
  for (int round = 0; round < 400; ++round) {
    RandomCluster c = random_cluster(rng);
    Fixture f;
    for (const auto& n : c.nodes) f.node(n);
    for (const auto& h : c.held) f.run(h.id, h.allocs, h.job.started_at_ms, h.job.project, h.job.preemptible);
    f.limits[0].guaranteed["HL-225"] = 16;  // Any job here is within it.
    f.limits[1].guaranteed["HL-225"] = 0;   // nlp borrows all it holds.
    const int devices = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    const int nodes = std::uniform_int_distribution<int>(1, 2)(rng);
    PendingJob want = wants(devices, nodes);
    SCOPED_TRACE("round " + std::to_string(round));
    auto out = f.plan(want);

    std::vector<std::string> eligible;
    for (const auto& h : c.held)
      if (h.job.preemptible && kNow - h.job.started_at_ms >= kMin) eligible.push_back(h.id);
    // The oracle: the smallest set of eligible jobs whose release lets the job fit.
    std::optional<size_t> smallest;
    if (!fits_without(c, {}, want)) {
      for (uint32_t bits = 1; bits < (1u << eligible.size()); ++bits) {
        const size_t size = static_cast<size_t>(__builtin_popcount(bits));
        if (smallest && size >= *smallest) continue;
        std::set<std::string> v;
        for (size_t i = 0; i < eligible.size(); ++i)
          if (bits & (1u << i)) v.insert(eligible[i]);
        if (fits_without(c, v, want)) smallest = size;
      }
    }
    if (!smallest) {
      EXPECT_FALSE(out.plan);
      continue;
    }
    ASSERT_TRUE(out.plan);
    ++planned;
    EXPECT_EQ(out.plan->victims.size(), *smallest);
    std::set<std::string> victims(out.plan->victims.begin(), out.plan->victims.end());
    for (const auto& v : victims) EXPECT_NE(std::find(eligible.begin(), eligible.end(), v), eligible.end()) << v;
    // Every card of the plan is free or a victim's; valid groups on distinct nodes.
    ASSERT_EQ(static_cast<int>(out.plan->allocations.size()), nodes);
    std::set<std::string> used_nodes;
    for (size_t i = 0; i < out.plan->allocations.size(); ++i) {
      const auto& a = out.plan->allocations[i];
      EXPECT_EQ(a.rank, static_cast<int>(i));
      EXPECT_TRUE(used_nodes.insert(a.node).second);
      EXPECT_EQ(static_cast<int>(a.module_ids.size()), devices);
      EXPECT_TRUE(valid_gaudi_group(a.module_ids));
      for (int m : a.module_ids) {
        auto h = f.alloc.holder(a.node, m);
        if (h) {
          EXPECT_TRUE(victims.count(*h)) << a.node << ":" << m << " held by " << *h;
        }
      }
    }
  }
  EXPECT_GT(planned, 50);
}

}  // namespace
}  // namespace tessel::scheduler::testing
