// The pure fair-share and quota policy: UsageLedger's decay, fair-share factors,
// the allocator's order and project limits, and a simulated day (no clock: the
// test moves time itself) with three projects that each want more than the
// cluster has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "test_helpers.hpp"
#include "tessel/scheduler/fair_share.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kHour = 3600 * 1000;

TEST(UsageLedger, ACardSecondUsedOneHalfLifeAgoCountsHalf) {
  UsageLedger l(kHour);
  // 2 cards for 1 ms ending at t=0: ~0.002 card-seconds then, half of it an hour later.
  l.add("p", "u", 2, -1, 0);
  EXPECT_NEAR(l.by_project(0).at("p"), 0.002, 1e-6);
  EXPECT_NEAR(l.by_project(kHour).at("p"), 0.001, 1e-6);
  EXPECT_NEAR(l.by_user(2 * kHour).at("u"), 0.0005, 1e-6);
}

TEST(UsageLedger, AnIntervalIntegratesTheDecayAndOrderDoesNotMatter) {
  const int64_t h = kHour;
  UsageLedger a(h), b(h);
  a.add("p", "u", 1, 0, h);
  a.add("p", "u", 1, 5 * h, 6 * h);
  b.add("p", "u", 1, 5 * h, 6 * h);
  b.add("p", "u", 1, 0, h);
  // One card for one half-life, seen at its end: H/ln2 * (1 - 1/2) card-seconds.
  const double one = 3600.0 / std::log(2.0) * 0.5;
  EXPECT_NEAR(a.by_project(6 * h).at("p"), one + one / 32, 1e-6);
  EXPECT_NEAR(b.by_project(6 * h).at("p"), a.by_project(6 * h).at("p"), 1e-6);
}

TEST(UsageLedger, StaysFiniteOverThousandsOfHalfLives) {
  UsageLedger l(1000);
  for (int64_t t = 0; t < 10'000'000; t += 10'000) l.add("p", "u", 8, t, t + 5'000);
  const double u = l.by_project(10'000'000).at("p");
  EXPECT_TRUE(std::isfinite(u));
  EXPECT_GT(u, 0);
}

TEST(FairShare, FactorsFollowUsageAgainstShares) {
  auto f = fair_share_factors({{"a", 1}, {"b", 1}, {"idle", 2}}, {});
  EXPECT_DOUBLE_EQ(f.at("a"), 1.0);  // Nobody used anything.
  f = fair_share_factors({{"a", 1}, {"b", 1}}, {{"a", 30}, {"b", 10}});
  EXPECT_LT(f.at("a"), f.at("b"));
  EXPECT_NEAR(f.at("a"), std::exp2(-0.75 / 0.5), 1e-12);
  // Twice the shares, twice the usage: the same factor.
  f = fair_share_factors({{"a", 2}, {"b", 1}}, {{"a", 20}, {"b", 10}});
  EXPECT_NEAR(f.at("a"), f.at("b"), 1e-12);
}

PendingJob in_project(PendingJob j, int32_t project, double fair_share = 1.0) {
  j.project = project;
  j.fair_share = fair_share;
  return j;
}

TEST(FairShareOrder, AtEqualPriorityTheProjectFurthestBelowItsShareGoesFirst) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  PendingJob heavy = job("heavy", 8, 1, 0, 1);
  heavy.fair_share = 0.2;
  PendingJob light = job("light", 8, 1, 0, 2);
  light.fair_share = 0.9;
  PendingJob urgent = job("urgent", 8, 1, 5, 3);
  urgent.fair_share = 0.01;
  auto r = a.schedule({heavy, light, urgent}, 0);
  ASSERT_TRUE(find_placement(r, "urgent"));  // Priority still comes first.
  ASSERT_EQ(r.order.size(), 3u);
  EXPECT_EQ(r.order[0], 2u);
  EXPECT_EQ(r.order[1], 1u);  // light before heavy, though submitted later.
  EXPECT_EQ(r.order[2], 0u);

  ModuleGroupAllocator b;
  b.upsert_node(gaudi_node("n1"));
  PendingJob u1 = job("u1", 8, 1, 0, 1), u2 = job("u2", 8, 1, 0, 2);
  u1.user_usage = 100;
  u2.user_usage = 5;
  auto r2 = b.schedule({u1, u2}, 0);
  EXPECT_TRUE(find_placement(r2, "u2"));  // Same project factor: the lighter user first.
}

TEST(Quotas, AProjectNeverPassesItsMaxAndSaysSo) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(gaudi_node("n2"));
  std::vector<ProjectLimits> limits{{"vision", {}, {{"HL-225", 12}}, {}}};
  auto r = a.schedule({in_project(job("a", 8, 1, 0, 1), 0), in_project(job("b", 4, 1, 0, 2), 0),
                       in_project(job("c", 2, 1, 0, 3), 0), job("other", 4, 1, 0, 4)},
                      0, &limits);
  EXPECT_TRUE(find_placement(r, "a"));
  EXPECT_TRUE(find_placement(r, "b"));
  EXPECT_EQ(reason(r, "c"), "project vision at its max of 12 HL-225 cards");
  EXPECT_TRUE(find_placement(r, "other"));  // Other projects are not limited by it.
  EXPECT_EQ(limits[0].held["HL-225"], 12);
  EXPECT_EQ(limits[0].held["*"], 12);

  ModuleGroupAllocator b;
  b.upsert_node(gaudi_node("n1"));
  std::vector<ProjectLimits> any{{"nlp", {{"*", 6}}, {{"*", 8}}, {}}};
  auto r2 = b.schedule({in_project(job("d", 4, 1, 0, 1), 0)}, 0, &any);
  EXPECT_EQ(reason(r2, "d"), "project nlp at its max of 8 cards");
}

TEST(Quotas, OnlyPreemptibleJobsBorrowPastTheGuarantee) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(gaudi_node("n2"));
  std::vector<ProjectLimits> limits{{"vision", {}, {{"*", 16}}, {{"*", 4}}}};
  PendingJob safe = in_project(job("safe", 4, 1, 0, 1), 0);
  PendingJob more = in_project(job("more", 4, 1, 0, 2), 0);
  PendingJob borrow = in_project(job("borrow", 8, 1, 0, 3), 0);
  borrow.preemptible = true;
  auto r = a.schedule({safe, more, borrow}, 0, &limits);
  EXPECT_TRUE(find_placement(r, "safe"));
  EXPECT_EQ(reason(r, "more"), "project vision at its guarantee of 4 cards (only preemptible jobs may borrow past it)");
  EXPECT_TRUE(find_placement(r, "borrow"));
}

TEST(Quotas, AJobWithoutAModelCountsTheModelsItsPlacementTakes) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("g2", {0, 1, 2, 3, 4, 5, 6, 7}, {}, "HL-225"));
  std::vector<ProjectLimits> limits{{"vision", {{"HL-225", 6}}, {{"HL-225", 8}}, {}}};
  auto r = a.schedule({in_project(job("any", 4, 1, 0, 1), 0)}, 0, &limits);
  EXPECT_EQ(reason(r, "any"), "project vision at its max of 8 HL-225 cards");
}

TEST(FairShareOrder, BackfillWorksAcrossProjects) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  auto busy = a.schedule({job("busy", 4, 1, 0, 1, 3600), job("busy2", 2, 1, 0, 2, 3600)}, 0);
  ASSERT_EQ(busy.placed.size(), 2u);
  // The project furthest below its share heads the queue and reserves the node; a
  // short job of another project backfills the free cards, one without a limit waits.
  PendingJob head = in_project(job("head", 8, 1, 0, 10), 0, 0.9);
  PendingJob quick = in_project(job("quick", 2, 1, 0, 11, 1800), 1, 0.1);
  PendingJob open = in_project(job("open", 2, 1, 0, 12), 2, 0.2);
  auto r = a.schedule({open, quick, head}, 0);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].job_id, "head");
  EXPECT_TRUE(find_placement(r, "quick"));
  EXPECT_EQ(reason(r, "open"), "waiting behind reservation for job head");
}

// A cluster run forward in time by hand: jobs end at their time limit.
struct Sim {
  struct Running {
    std::string id;
    int project;
    int64_t cards;
    int64_t start, end;
  };
  struct Waiting {
    PendingJob job;
    int project;
    int64_t run_ms;
  };

  explicit Sim(int nodes, int projects, int64_t half_life_ms) : ledger(half_life_ms), used(projects, 0.0) {
    for (int i = 0; i < nodes; ++i) alloc.upsert_node(gaudi_node("n" + std::to_string(i)));
  }

  // Keeps `depth` jobs waiting per project: sizes 1/2/4/8, 10 to 60 minutes.
  void top_up(int project, int depth, std::mt19937& rng) {
    int have = 0;
    for (const auto& w : waiting) have += w.project == project;
    std::uniform_int_distribution<int> size_log(0, 3), minutes(10, 60);
    for (; have < depth; ++have) {
      const int64_t run = int64_t{minutes(rng)} * 60 * 1000;
      ++seq;
      PendingJob j = job("j" + std::to_string(seq), 1 << size_log(rng), 1, 0, seq, run / 1000);
      j.project = project;
      waiting.push_back({j, project, run});
    }
  }

  // Ends what is due at `now`, then runs one pass with fair-share factors from the ledger.
  void step(int64_t now, std::vector<ProjectLimits>* limits) {
    for (auto it = running.begin(); it != running.end();) {
      if (it->end > now) {
        ++it;
        continue;
      }
      alloc.release(it->id);
      ledger.add(name(it->project), "u", it->cards, it->start, it->end);
      if (limits) (*limits)[static_cast<size_t>(it->project)].held["*"] -= it->cards;
      it = running.erase(it);
    }
    UsageLedger now_ledger = ledger;
    for (const auto& r : running) now_ledger.add(name(r.project), "u", r.cards, r.start, now);
    std::map<std::string, int64_t> shares;
    for (size_t p = 0; p < used.size(); ++p) shares[name(static_cast<int>(p))] = 1;
    auto factors = fair_share_factors(shares, now_ledger.by_project(now));
    std::vector<PendingJob> queue;
    for (auto& w : waiting) {
      w.job.fair_share = factors[name(w.project)];
      queue.push_back(w.job);
    }
    auto res = alloc.schedule(queue, now, limits);
    std::set<std::string> placed;
    for (const auto& p : res.placed) {
      placed.insert(p.job_id);
      auto w = std::find_if(waiting.begin(), waiting.end(), [&](const Waiting& x) { return x.job.id == p.job_id; });
      int64_t cards = 0;
      for (const auto& a : p.allocations) cards += static_cast<int64_t>(a.module_ids.size());
      running.push_back({p.job_id, w->project, cards, now, now + w->run_ms});
    }
    waiting.erase(
        std::remove_if(waiting.begin(), waiting.end(), [&](const Waiting& w) { return placed.count(w.job.id) > 0; }),
        waiting.end());
  }

  static std::string name(int p) { return "p" + std::to_string(p); }

  // No card in two live allocations.
  bool cards_disjoint() const {
    std::set<std::pair<std::string, int>> seen;
    for (const auto& [job, allocs] : alloc.holdings())
      for (const auto& a : allocs)
        for (int m : a.module_ids)
          if (!seen.insert({a.node, m}).second) return false;
    return true;
  }

  ModuleGroupAllocator alloc;
  UsageLedger ledger;
  std::vector<Running> running;
  std::vector<Waiting> waiting;
  std::vector<double> used;
  int64_t seq = 0;
};

TEST(FairShareSimulation, ThreeEqualProjectsEachGetAThirdOfADay) {
  std::mt19937 rng(11);
  Sim sim(4, 3, 7 * 24 * kHour);
  // Project 0 submits first and much more: without fair share it would hold the cluster.
  sim.top_up(0, 200, rng);
  const int64_t day = 24 * kHour;
  for (int64_t now = 0; now < day; now += 60 * 1000) {
    for (int p = 0; p < 3; ++p) sim.top_up(p, p == 0 ? 200 : 20, rng);
    sim.step(now, nullptr);
    ASSERT_TRUE(sim.cards_disjoint()) << "at " << now;
    // Card-seconds accrue minute by minute for what runs now.
    for (const auto& r : sim.running) sim.used[static_cast<size_t>(r.project)] += double(r.cards) * 60;
  }
  const double total = sim.used[0] + sim.used[1] + sim.used[2];
  ASSERT_GT(total, 0.8 * 32 * 24 * 3600);  // The cluster stayed busy.
  for (int p = 0; p < 3; ++p) {
    EXPECT_NEAR(sim.used[static_cast<size_t>(p)] / total, 1.0 / 3, 0.1 / 3)
        << "project " << p << " card-hours " << sim.used[static_cast<size_t>(p)] / 3600 << " of " << total / 3600;
  }
}

TEST(FairShareSimulation, AQuotaMaxIsNeverExceededOverADay) {
  std::mt19937 rng(7);
  Sim sim(4, 3, 7 * 24 * kHour);
  std::vector<ProjectLimits> limits{{"p0", {}, {{"*", 8}}, {}}, {"p1", {}, {}, {}}, {"p2", {}, {}, {}}};
  for (int64_t now = 0; now < 24 * kHour; now += 60 * 1000) {
    for (int p = 0; p < 3; ++p) sim.top_up(p, 30, rng);
    sim.step(now, &limits);
    int64_t held = 0;
    for (const auto& r : sim.running) held += r.project == 0 ? r.cards : 0;
    ASSERT_LE(held, 8) << "at " << now;
    ASSERT_EQ(held, limits[0].held["*"]);
    ASSERT_TRUE(sim.cards_disjoint()) << "at " << now;
  }
}

}  // namespace
}  // namespace tessel::scheduler::testing
