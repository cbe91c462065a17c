// plan_pass(): the scheduling pass's plan as a value, driven without a server,
// threads, a store or a clock: an allocator, a queue, and the nodes' addresses and
// master ports in use as plain functions; the preemption it plans from a list of
// running jobs and the projects' limits.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tessel/scheduler/pass_plan.hpp"

namespace tessel::scheduler {
namespace {

constexpr int64_t kNow = 1'000'000;

NodeSpec gaudi(const std::string& name) {
  NodeSpec n;
  n.name = name;
  for (int m = 0; m < 8; ++m) n.cards.push_back({m, m, "HL-225", true});
  return n;
}

PendingJob pending(const std::string& id, int devices, int priority, int64_t seq) {
  PendingJob j;
  j.id = id;
  j.devices = devices;
  j.priority = priority;
  j.seq = seq;
  return j;
}

// Ports 29500-29509; nodes reached at "addr-<name>"; `in_use` the master ports of
// running jobs by node.
PassInput input(const std::vector<PendingJob>& queue, const std::map<std::string, std::set<int>>& in_use = {}) {
  PassInput in;
  in.queue = &queue;
  in.now_ms = kNow;
  in.master_port_lo = 29500;
  in.master_port_hi = 29509;
  in.address_of = [](const std::string& node) { return "addr-" + node; };
  in.ports_in_use = [in_use](const std::string& node) {
    auto it = in_use.find(node);
    return it == in_use.end() ? std::set<int>{} : it->second;
  };
  return in;
}

const MasterEndpoint* master_of(const PassPlan& plan, const std::string& id) {
  for (size_t i = 0; i < plan.result.placed.size(); ++i)
    if (plan.result.placed[i].job_id == id) return &plan.masters[i];
  return nullptr;
}

TEST(PassPlan, EachPlacementGetsRankZerosNodeAddressAndItsLowestFreePort) {
  ModuleGroupAllocator alloc;
  alloc.upsert_node(gaudi("n1"));
  alloc.upsert_node(gaudi("n2"));
  const std::vector<PendingJob> queue = {pending("a", 8, 0, 1), pending("b", 8, 0, 2)};
  const PassPlan plan = plan_pass(alloc, input(queue, {{"n1", {29500, 29502}}}));
  ASSERT_EQ(plan.result.placed.size(), 2U);
  ASSERT_EQ(plan.masters.size(), 2U);
  for (size_t i = 0; i < 2; ++i) {
    const std::string node = plan.result.placed[i].allocations.at(0).node;
    EXPECT_EQ(plan.masters[i].addr, "addr-" + node);
    // n1 runs jobs with rank 0 on 29500 and 29502: the lowest free one is 29501.
    EXPECT_EQ(plan.masters[i].port, node == "n1" ? 29501 : 29500) << node;
  }
}

TEST(PassPlan, JobsPlacedOnOneNodeInOnePassGetDifferentPortsAndRunOutAtTheRangesEnd) {
  ModuleGroupAllocator alloc;
  alloc.upsert_node(gaudi("n1"));
  const std::vector<PendingJob> queue = {pending("a", 2, 0, 1), pending("b", 2, 0, 2), pending("c", 2, 0, 3)};
  std::set<int> busy;
  for (int p = 29500; p <= 29508; ++p) busy.insert(p);  // One port left: 29509.
  const PassPlan plan = plan_pass(alloc, input(queue, {{"n1", busy}}));
  ASSERT_EQ(plan.result.placed.size(), 3U);
  std::multiset<int> ports;
  for (const auto& m : plan.masters) ports.insert(m.port);
  // The first job placed takes the last free port; the others find none (0).
  EXPECT_EQ(ports, (std::multiset<int>{0, 0, 29509}));
}

TEST(PassPlan, QueuePositionsFollowTheSchedulingOrderAndPlacedJobsHaveNone) {
  ModuleGroupAllocator alloc;
  alloc.upsert_node(gaudi("n1"));
  // One node of 8 cards: only the first in scheduling order fits.
  const std::vector<PendingJob> queue = {pending("low", 8, 0, 1), pending("high", 8, 5, 2), pending("mid", 8, 1, 3)};
  const PassPlan plan = plan_pass(alloc, input(queue));
  ASSERT_EQ(plan.result.placed.size(), 1U);
  EXPECT_EQ(plan.result.placed[0].job_id, "high");
  EXPECT_EQ(plan.queue_positions, (std::vector<int>{2, 0, 1}));  // Parallel to the queue.
  EXPECT_NE(plan.result.pending_reasons.find("low"), nullptr);
  EXPECT_EQ(plan.result.pending_reasons.find("high"), nullptr);
}

TEST(PassPlan, AJobWaitingForCardsWithATimeLimitGetsTheirEndAsItsEstimatedStart) {
  ModuleGroupAllocator alloc;
  alloc.upsert_node(gaudi("n1"));
  api::Allocation all{"n1", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
  alloc.hold("running", {all}, kNow + 60'000);
  const std::vector<PendingJob> queue = {pending("next", 8, 0, 1)};
  const PassPlan plan = plan_pass(alloc, input(queue));
  EXPECT_TRUE(plan.result.placed.empty());
  EXPECT_EQ(plan.queue_positions, (std::vector<int>{1}));
  ASSERT_EQ(plan.estimated_starts.size(), 1U);
  EXPECT_EQ(plan.estimated_starts[0].job_id, "next");
  EXPECT_EQ(plan.estimated_starts[0].at_ms, kNow + 60'000);
}

TEST(PassPlan, PlacementsDecidedBeforeThePassJoinThePlanWithTheirMasterEndpoint) {
  ModuleGroupAllocator alloc;
  alloc.upsert_node(gaudi("n1"));
  alloc.upsert_node(gaudi("n2"));
  api::Allocation claimed{"n2", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
  alloc.hold("claimant", {claimed}, std::nullopt);  // As a preemption's cards are.
  const std::vector<PendingJob> queue = {pending("queued", 8, 0, 2)};
  PassInput in = input(queue, {{"n2", {29500}}});
  in.ready.push_back(Placement{"claimant", {claimed}});
  const PassPlan plan = plan_pass(alloc, std::move(in));
  ASSERT_EQ(plan.result.placed.size(), 2U);
  const MasterEndpoint* m = master_of(plan, "claimant");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->addr, "addr-n2");
  EXPECT_EQ(m->port, 29501);
  ASSERT_NE(master_of(plan, "queued"), nullptr);
  EXPECT_EQ(master_of(plan, "queued")->addr, "addr-n1");
  EXPECT_EQ(plan.queue_positions, (std::vector<int>{0}));
}

// Preemption is part of the plan: project 0 (vision, guaranteed 8) waits while project 1
// (batch) borrows all 8 cards of n1 in a preemptible job; the plan names it as the
// victim, with the cards vision's job will take. A victim not yet past the minimum
// runtime gives no plan, only when to look again.
struct PreemptionCase {
  ModuleGroupAllocator alloc;
  std::vector<ProjectLimits> limits{{"vision", {}, {}, {{"*", 8}}}, {"batch", {{"*", 8}}, {}, {}}};
  std::vector<PendingJob> queue;
  int running_asked = 0;
  PreemptionCase() {
    alloc.upsert_node(gaudi("n1"));
    alloc.hold("b", {api::Allocation{"n1", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}}}, std::nullopt);
    PendingJob a = pending("a", 8, 0, 2);
    a.project = 0;
    a.within_guarantee = true;
    queue = {a};
  }
  PassInput input_at(int64_t started_at_ms) {
    PassInput in = input(queue);
    in.limits = &limits;
    in.preempt_min_runtime_ms = 60'000;
    in.running = [this, started_at_ms] {
      ++running_asked;
      return std::vector<RunningJob>{{"b", 1, true, started_at_ms}};
    };
    return in;
  }
};

TEST(PassPlan, HoldsThePreemptionOfABorrowerForAJobWithinItsGuarantee) {
  PreemptionCase c;
  const PassPlan plan = plan_pass(c.alloc, c.input_at(kNow - 60'000));
  EXPECT_TRUE(plan.result.placed.empty());
  ASSERT_TRUE(plan.preemption);
  EXPECT_EQ(plan.preemption->queue_index, 0U);
  EXPECT_EQ(plan.preemption->plan.victims, std::vector<std::string>{"b"});
  ASSERT_EQ(plan.preemption->plan.allocations.size(), 1U);
  EXPECT_EQ(plan.preemption->plan.allocations[0].module_ids.size(), 8U);
  EXPECT_FALSE(plan.preempt_retry_at_ms);
  EXPECT_EQ(c.running_asked, 1);
}

TEST(PassPlan, AVictimTooYoungGivesNoPreemptionButWhenToLookAgain) {
  PreemptionCase c;
  const PassPlan plan = plan_pass(c.alloc, c.input_at(kNow - 1'000));
  EXPECT_FALSE(plan.preemption);
  ASSERT_TRUE(plan.preempt_retry_at_ms);
  EXPECT_EQ(*plan.preempt_retry_at_ms, kNow - 1'000 + 60'000);
}

TEST(PassPlan, NoPreemptionWithoutQuotasAndTheRunningJobsAreNotAskedFor) {
  PreemptionCase c;
  PassInput in = c.input_at(kNow - 60'000);
  in.limits = nullptr;
  c.queue[0].project = -1;
  c.queue[0].within_guarantee = false;
  const PassPlan plan = plan_pass(c.alloc, std::move(in));
  EXPECT_FALSE(plan.preemption);
  EXPECT_EQ(c.running_asked, 0);
}

}  // namespace
}  // namespace tessel::scheduler
