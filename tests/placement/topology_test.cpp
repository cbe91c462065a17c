// Topology-aware gangs in placement (issue 32): a required topology keeps a gang in one
// block of a label key (it waits otherwise, naming the largest block); a preferred one
// picks the block that fits with least waste and falls back to wider levels, then to
// any nodes; backfill's reservation and preemption keep a required gang in one block;
// single-node jobs ignore topology.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "src/node_filter.hpp"
#include "test_helpers.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kNow = 1'000'000;
const std::vector<int> kAll = {0, 1, 2, 3, 4, 5, 6, 7};

NodeSpec labelled(const std::string& name, api::Labels labels) {
  NodeSpec n = gaudi_node(name);
  n.labels = std::move(labels);
  return n;
}

std::set<std::string> nodes_of(const Placement* p) {
  std::set<std::string> out;
  if (p == nullptr) return out;
  for (const auto& a : p->allocations) out.insert(a.node);
  return out;
}

api::NodeConstraints required(const std::string& key) {
  api::NodeConstraints c;
  c.topology.required = key;
  return c;
}

api::NodeConstraints preferred(const std::string& key) {
  api::NodeConstraints c;
  c.topology.preferred = key;
  return c;
}

PendingJob constrained(const std::string& id, int devices, int nodes, const api::NodeConstraints& c) {
  PendingJob j = job(id, devices, nodes);
  j.constraints = &c;
  return j;
}

// n1, n2 in rack r1; n3, n4 in rack r2; n5 without a rack.
struct TwoRacks {
  ModuleGroupAllocator alloc;
  TwoRacks() {
    alloc.upsert_node(labelled("n1", {{"rack", "r1"}}));
    alloc.upsert_node(labelled("n2", {{"rack", "r1"}}));
    alloc.upsert_node(labelled("n3", {{"rack", "r2"}}));
    alloc.upsert_node(labelled("n4", {{"rack", "r2"}}));
    alloc.upsert_node(gaudi_node("n5"));
  }
  void fill(const std::string& node, std::optional<int64_t> end_ms = std::nullopt) {
    ASSERT_TRUE(alloc.try_hold("j-fill-" + node, {api::Allocation{node, 0, kAll, {}}}, end_ms).ok());
  }
};

TEST(TopologyPlan, RequiredPreferredAndTheDefault) {
  api::NodeConstraints r = required("rack"), p = preferred("leaf");
  PendingJob gang = job("j-g", 8, 2), single = job("j-s", 8, 1);
  // The plan's keys are views of the job's constraints and of these levels: both outlive it.
  const std::vector<std::string> none_given, leaf_spine{"leaf", "spine"}, leaf{"leaf"};
  EXPECT_TRUE(detail::topology_plan(gang, none_given).empty());
  auto by_default = detail::topology_plan(gang, leaf_spine);
  EXPECT_EQ(by_default.keys, (std::vector<std::string_view>{"leaf", "spine"}));
  EXPECT_FALSE(by_default.required);
  gang.constraints = &p;
  EXPECT_EQ(detail::topology_plan(gang, leaf_spine).keys, (std::vector<std::string_view>{"leaf", "spine"}));
  p.topology.preferred = "spine";  // Wider levels only after the preferred one.
  EXPECT_EQ(detail::topology_plan(gang, leaf_spine).keys, (std::vector<std::string_view>{"spine"}));
  gang.constraints = &r;
  auto req = detail::topology_plan(gang, leaf);
  EXPECT_EQ(req.keys, (std::vector<std::string_view>{"rack"}));
  EXPECT_TRUE(req.required);
  single.constraints = &r;
  EXPECT_TRUE(detail::topology_plan(single, leaf).empty());
  // Constraints that differ only in topology do not share cached failures.
  api::NodeConstraints none;
  EXPECT_TRUE(detail::ConstraintsKey{&none} < detail::ConstraintsKey{&r});
  EXPECT_FALSE(detail::ConstraintsKey{&none} == detail::ConstraintsKey{&r});
  EXPECT_EQ(detail::describe(r), "one rack");
}

TEST(Topology, RequiredWaitsForOneRackThenTakesIt) {
  TwoRacks c;
  c.fill("n1");
  c.fill("n3");
  api::NodeConstraints rack = required("rack");
  // n2, n4 and n5 are free, but no rack has two free nodes.
  auto res = c.alloc.schedule({constrained("j-g", 8, 2, rack)}, kNow);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-g"), "waiting for 2 nodes with one rack value: largest block rack=r1 has 1 free");
  // A gang larger than any rack never fits.
  auto big = c.alloc.schedule({constrained("j-big", 8, 3, rack)}, kNow);
  EXPECT_EQ(reason(big, "j-big"), "no rack block has 3 nodes able to take the job (largest: rack=r1 with 2)");
  c.alloc.release("j-fill-n3");
  auto then = c.alloc.schedule({constrained("j-g", 8, 2, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(then, "j-g")), (std::set<std::string>{"n3", "n4"}));
}

TEST(Topology, RequiredGangLargerThanEveryBlockSaysSo) {
  TwoRacks c;
  api::NodeConstraints rack = required("rack");
  auto res = c.alloc.schedule({constrained("j-big", 1, 3, rack)}, kNow);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-big"), "no rack block has 3 nodes able to take the job (largest: rack=r1 with 2)");
  api::NodeConstraints zone = required("zone");  // No node has the label.
  auto none = c.alloc.schedule({constrained("j-z", 1, 2, zone)}, kNow);
  EXPECT_EQ(reason(none, "j-z"),
            "no node has 1 healthy cards (node n1: without label zone; node n2: without label zone; node n3: without "
            "label zone)");
}

TEST(Topology, SingleNodeJobsIgnoreTopology) {
  TwoRacks c;
  for (const char* n : {"n1", "n2", "n3", "n4"}) c.fill(n);
  api::NodeConstraints rack = required("rack");
  auto res = c.alloc.schedule({constrained("j-s", 8, 1, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-s")), std::set<std::string>{"n5"});
}

// A gang of CPU-only ranks (no cards) keeps to one block as a gang with cards does.
TEST(Topology, AGangWithoutCardsKeepsToOneBlockToo) {
  TwoRacks two;
  api::NodeConstraints rack = required("rack");
  auto big = two.alloc.schedule({constrained("j-big", 0, 3, rack)}, kNow);
  EXPECT_TRUE(big.placed.empty());
  EXPECT_EQ(reason(big, "j-big"), "no rack block has 3 nodes able to take the job (largest: rack=r1 with 2)");
  auto fits = two.alloc.schedule({constrained("j-2", 0, 2, rack)}, kNow);
  const auto in = nodes_of(find_placement(fits, "j-2"));
  EXPECT_TRUE(in == (std::set<std::string>{"n1", "n2"}) || in == (std::set<std::string>{"n3", "n4"}));
}

// r1: n1, n2, n3; r2: n4, n5; n6 without a rack.
struct UnevenRacks {
  ModuleGroupAllocator alloc;
  UnevenRacks() {
    for (const char* n : {"n1", "n2", "n3"}) alloc.upsert_node(labelled(n, {{"rack", "r1"}, {"spine", "s1"}}));
    for (const char* n : {"n4", "n5"}) alloc.upsert_node(labelled(n, {{"rack", "r2"}, {"spine", "s1"}}));
    alloc.upsert_node(gaudi_node("n6"));
  }
};

TEST(Topology, PreferredPicksTheBlockWithLeastWaste) {
  UnevenRacks c;
  api::NodeConstraints rack = preferred("rack");
  // Plain placement would take n1 and n2 (lowest numbers); rack r2 fits with nothing left over.
  auto res = c.alloc.schedule({constrained("j-p", 8, 2, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-p")), (std::set<std::string>{"n4", "n5"}));
  // Then a gang of 3 fits r1 exactly.
  auto next = c.alloc.schedule({constrained("j-3", 8, 3, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(next, "j-3")), (std::set<std::string>{"n1", "n2", "n3"}));
}

TEST(Topology, AConfiguredKeyIsEveryGangsPreference) {
  UnevenRacks c;
  c.alloc.set_topology_levels({"rack"});
  auto res = c.alloc.schedule({job("j-g", 8, 2), job("j-s", 8, 1, 0, 1)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-g")), (std::set<std::string>{"n4", "n5"}));
  EXPECT_EQ(nodes_of(find_placement(res, "j-s")).size(), 1u);
}

TEST(Topology, AGangWithoutCardsPrefersTheBlockWithLeastWaste) {
  UnevenRacks c;
  api::NodeConstraints rack = preferred("rack");
  // Without topology it would take n1 and n2; rack r2 holds two nodes with none left over.
  auto res = c.alloc.schedule({constrained("j-c", 0, 2, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-c")), (std::set<std::string>{"n4", "n5"}));
  c.alloc.set_topology_levels({"rack"});  // The configured level: every gang's preference.
  auto by_default = c.alloc.schedule({job("j-d", 0, 3)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(by_default, "j-d")), (std::set<std::string>{"n1", "n2", "n3"}));
}

TEST(Topology, PreferredFallsBackToWiderLevelsThenAnyNodes) {
  UnevenRacks c;
  c.alloc.set_topology_levels({"rack", "spine"});
  // 4 nodes: no rack has them, spine s1 has 5.
  auto res = c.alloc.schedule({job("j-4", 8, 4)}, kNow);
  auto four = nodes_of(find_placement(res, "j-4"));
  ASSERT_EQ(four.size(), 4u);
  EXPECT_FALSE(four.count("n6"));
  c.alloc.release("j-4");
  // 6 nodes: only all of them, n6 (no labels) too.
  auto all = c.alloc.schedule({job("j-6", 8, 6)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(all, "j-6")).size(), 6u);
}

TEST(Topology, ReservationOfARequiredGangStaysInOneRack) {
  TwoRacks c;
  // n1 and n3 free soonest, but in different racks; r1's n2 frees before r2's n4.
  c.fill("n1", kNow + 60'000);
  c.fill("n3", kNow + 60'000);
  c.fill("n2", kNow + 3'600'000);
  c.fill("n4", kNow + 7'200'000);
  c.fill("n5", kNow + 1'000);
  api::NodeConstraints rack = required("rack");
  PendingJob g = constrained("j-g", 8, 2, rack);
  g.time_limit_s = 600;
  auto res = c.alloc.schedule({g}, kNow);
  ASSERT_EQ(res.reservations.size(), 1u);
  std::set<std::string> nodes;
  for (const auto& a : res.reservations[0].allocations) nodes.insert(a.node);
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(res.reservations[0].start_ms, kNow + 3'600'000);
}

TEST(Topology, PreemptionForARequiredGangFreesOneRack) {
  TwoRacks c;
  std::vector<RunningJob> running;
  // Newest first: n2 (r1) and n3 (r2) would be the victims without a topology.
  const std::vector<std::pair<std::string, int64_t>> started = {
      {"n1", 1000}, {"n2", 9000}, {"n3", 8000}, {"n4", 2000}, {"n5", 9500}};
  for (const auto& [n, at] : started) {
    c.alloc.hold("j-" + n, {api::Allocation{n, 0, kAll, {}}}, std::nullopt);
    running.push_back(RunningJob{"j-" + n, -1, true, at});
  }
  ProjectLimits mine;
  mine.name = "mine";
  mine.guaranteed["*"] = 16;
  std::vector<ProjectLimits> limits = {mine};
  api::NodeConstraints rack = required("rack");
  PendingJob g = constrained("j-want", 8, 2, rack);
  g.project = 0;
  auto out = c.alloc.plan_preemption(PreemptionRequest{&g, running, &limits, kNow, 0});
  ASSERT_TRUE(out.plan);
  std::set<std::string> victims(out.plan->victims.begin(), out.plan->victims.end());
  EXPECT_EQ(victims, (std::set<std::string>{"j-n3", "j-n4"}));  // Of r1 and r2, r2's victims are newer.
  std::set<std::string> nodes;
  for (const auto& a : out.plan->allocations) nodes.insert(a.node);
  EXPECT_EQ(nodes, (std::set<std::string>{"n3", "n4"}));
  // Without a topology, the two newest in the racks and n5: n5 and n2.
  PendingJob plain = job("j-plain", 8, 2);
  plain.project = 0;
  auto any = c.alloc.plan_preemption(PreemptionRequest{&plain, running, &limits, kNow, 0});
  ASSERT_TRUE(any.plan);
  EXPECT_EQ(std::set<std::string>(any.plan->victims.begin(), any.plan->victims.end()),
            (std::set<std::string>{"j-n5", "j-n2"}));
}

TEST(Topology, LabelIndexFollowsRelabelling) {
  TwoRacks c;
  api::NodeConstraints rack = required("rack");
  c.fill("n2");
  c.fill("n4");
  // Move n5 into rack r1: n1 and n5 then make a block.
  c.alloc.upsert_node(labelled("n5", {{"rack", "r1"}}));
  auto res = c.alloc.schedule({constrained("j-g", 8, 2, rack)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-g")), (std::set<std::string>{"n1", "n5"}));
  // And out again: n1's rack is short now.
  c.alloc.release("j-g");
  c.alloc.upsert_node(labelled("n5", {{"zone", "z"}}));
  auto after = c.alloc.schedule({constrained("j-h", 8, 2, rack)}, kNow);
  EXPECT_TRUE(after.placed.empty());
}

}  // namespace
}  // namespace tessel::scheduler::testing
