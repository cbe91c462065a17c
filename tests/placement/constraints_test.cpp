// Node constraints in placement (issue 32): node_selector, nodelist and exclude for
// single-node jobs and gangs, with backfill's reservation and preemption honouring
// them, and pending reasons that name the constraint.
#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "src/node_filter.hpp"
#include "test_helpers.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kNow = 1'000'000;

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

// Four nodes: n1 and n2 in rack r1, n3 and n4 in rack r2 (n4 also fabric=ib).
struct Racks {
  ModuleGroupAllocator alloc;
  Racks() {
    alloc.upsert_node(labelled("n1", {{"rack", "r1"}}));
    alloc.upsert_node(labelled("n2", {{"rack", "r1"}}));
    alloc.upsert_node(labelled("n3", {{"rack", "r2"}}));
    alloc.upsert_node(labelled("n4", {{"rack", "r2"}, {"fabric", "ib"}}));
  }
};

PendingJob constrained(const std::string& id, int devices, int nodes, const api::NodeConstraints& c) {
  PendingJob j = job(id, devices, nodes);
  j.constraints = &c;
  return j;
}

TEST(NodeFilter, AdmitsBySelectorExcludeAndAFullNodelist) {
  detail::Node n;
  n.name = "n4";
  n.labels = std::make_unique<const api::Labels>(api::Labels{{"rack", "r2"}, {"fabric", "ib"}});
  api::NodeConstraints c;
  EXPECT_TRUE(detail::admits(n, c, 1));
  c.node_selector = {{"rack", "r2"}};
  EXPECT_TRUE(detail::admits(n, c, 1));
  c.node_selector["fabric"] = "eth";
  EXPECT_FALSE(detail::admits(n, c, 1));
  EXPECT_EQ(detail::constraint_note(n, c, 1), "not fabric=eth");
  c.node_selector = {{"zone", ""}};  // A key the node lacks never matches, even an empty value.
  EXPECT_FALSE(detail::admits(n, c, 1));
  c.node_selector.clear();
  c.exclude = {"n4"};
  EXPECT_FALSE(detail::admits(n, c, 1));
  EXPECT_EQ(detail::constraint_note(n, c, 1), "in exclude");
  c.exclude.clear();
  c.nodelist = {"n1"};
  EXPECT_FALSE(detail::admits(n, c, 1));  // The nodelist is the whole job.
  EXPECT_TRUE(detail::admits(n, c, 2));   // n1 and one more, which may be n4.
  EXPECT_EQ(detail::describe(api::NodeConstraints{{{"rack", "r7"}}, {"n1"}, {"n9"}}),
            "rack=r7; nodelist n1; exclude n9");
}

TEST(NodeFilter, SameConstraintsShareAKey) {
  api::NodeConstraints a{{{"rack", "r1"}}, {}, {}}, b = a, c{{{"rack", "r2"}}, {}, {}};
  using detail::ConstraintsKey;
  EXPECT_TRUE(ConstraintsKey{&a} == ConstraintsKey{&b});
  EXPECT_FALSE(ConstraintsKey{&a} < ConstraintsKey{&b});
  EXPECT_TRUE(ConstraintsKey{nullptr} < ConstraintsKey{&a});
  EXPECT_TRUE(ConstraintsKey{&a} < ConstraintsKey{&c});
  EXPECT_FALSE(ConstraintsKey{nullptr} == ConstraintsKey{&a});
}

TEST(Constraints, SelectorPlacesOnMatchingNodesOnly) {
  Racks r;
  api::NodeConstraints ib{{{"fabric", "ib"}}, {}, {}};
  api::NodeConstraints r1{{{"rack", "r1"}}, {}, {}};
  auto res = r.alloc.schedule({constrained("j-ib", 8, 1, ib), constrained("j-r1", 4, 2, r1)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-ib")), std::set<std::string>{"n4"});
  EXPECT_EQ(nodes_of(find_placement(res, "j-r1")), (std::set<std::string>{"n1", "n2"}));
  // n4 is full now: the next ib job waits, naming its constraint.
  auto second = r.alloc.schedule({constrained("j-ib2", 8, 1, ib)}, kNow);
  EXPECT_TRUE(second.placed.empty());
  EXPECT_EQ(reason(second, "j-ib2"), "waiting for 8 free cards in one valid group (fabric=ib)");
}

TEST(Constraints, NoMatchingNodeIsTheReason) {
  Racks r;
  api::NodeConstraints r9{{{"rack", "r9"}}, {}, {}};
  api::NodeConstraints ib3{{{"fabric", "ib"}}, {}, {}};
  api::NodeConstraints not_r2{{}, {}, {"n3", "n4"}};
  auto res = r.alloc.schedule(
      {constrained("j-r9", 1, 1, r9), constrained("j-ib", 1, 2, ib3), constrained("j-x", 1, 3, not_r2)}, kNow);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-r9"), "no ready node with rack=r9");
  EXPECT_EQ(reason(res, "j-ib"), "only 1 ready node with fabric=ib, job needs 2");
  EXPECT_EQ(reason(res, "j-x"), "only 2 ready nodes outside exclude (n3,n4), job needs 3");
  // A drained node no longer counts.
  r.alloc.set_schedulable("n4", false);
  api::NodeConstraints ib{{{"fabric", "ib"}}, {}, {}};
  auto drained = r.alloc.schedule({constrained("j-ib1", 1, 1, ib)}, kNow);
  EXPECT_EQ(reason(drained, "j-ib1"), "no ready node with fabric=ib");
}

TEST(Constraints, ExcludeKeepsAJobOffItsNodes) {
  Racks r;
  api::NodeConstraints x{{}, {}, {"n1", "n2", "n3"}};
  auto res = r.alloc.schedule({constrained("j-1", 1, 1, x), constrained("j-2", 1, 1, x)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(res, "j-1")), std::set<std::string>{"n4"});
  EXPECT_EQ(nodes_of(find_placement(res, "j-2")), std::set<std::string>{"n4"});
}

TEST(Constraints, NodelistIsPartOfTheJob) {
  Racks r;
  // The most used node is the best fit: make n1 busy so that plain placement prefers it.
  r.alloc.hold("j-busy", {api::Allocation{"n1", 0, {0, 1, 2, 3}, {7, 6, 5, 4}}}, std::nullopt);
  api::NodeConstraints only_n3{{}, {"n3"}, {}};
  auto one = r.alloc.schedule({constrained("j-n3", 2, 1, only_n3)}, kNow);
  EXPECT_EQ(nodes_of(find_placement(one, "j-n3")), std::set<std::string>{"n3"});
  // A gang of 3 with n4 listed: n4 and two others.
  api::NodeConstraints with_n4{{}, {"n4"}, {}};
  auto gang = r.alloc.schedule({constrained("j-g", 4, 3, with_n4)}, kNow);
  auto got = nodes_of(find_placement(gang, "j-g"));
  EXPECT_EQ(got.size(), 3u);
  EXPECT_TRUE(got.count("n4"));
  EXPECT_EQ(find_placement(gang, "j-g")->allocations[0].node, "n4");  // Listed nodes take the first ranks.
  // A listed node that is full: the job waits (and says which node).
  Racks full;
  ASSERT_TRUE(full.alloc.try_hold("j-fill", {api::Allocation{"n2", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, std::nullopt));
  api::NodeConstraints with_n2{{}, {"n2"}, {}};
  auto wait = full.alloc.schedule({constrained("j-w", 1, 2, with_n2)}, kNow);
  EXPECT_TRUE(wait.placed.empty());
  EXPECT_EQ(reason(wait, "j-w"), "waiting for 1 free cards in one valid group on each of 2 nodes (nodelist n2)");
}

TEST(Constraints, ListedNodeThatCannotRunTheJobIsTheReason) {
  Racks r;
  r.alloc.set_schedulable("n2", false);
  api::NodeConstraints ghost{{}, {"n9"}, {}}, down{{}, {"n2"}, {}}, wrong{{{"rack", "r1"}}, {"n3"}, {}};
  auto res = r.alloc.schedule(
      {constrained("j-ghost", 1, 1, ghost), constrained("j-down", 1, 1, down), constrained("j-wrong", 1, 2, wrong)},
      kNow);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-ghost"), "node n9 of the nodelist is not known");
  EXPECT_EQ(reason(res, "j-down"), "node n2 of the nodelist is not ready");
  EXPECT_EQ(reason(res, "j-wrong"), "node n3 of the nodelist is not rack=r1");
}

TEST(Constraints, ConstrainedAndPlainJobsDoNotShareFailures) {
  Racks r;
  api::NodeConstraints r9{{{"rack", "r9"}}, {}, {}};
  // The same size and kind: the constrained job's failure must not hold back the plain one.
  auto res = r.alloc.schedule({constrained("j-a", 8, 1, r9), job("j-b", 8, 1, 0, 1)}, kNow);
  EXPECT_TRUE(find_placement(res, "j-b"));
  EXPECT_FALSE(find_placement(res, "j-a"));
  // Two jobs with equal constraints (distinct objects) both place.
  api::NodeConstraints a{{{"rack", "r2"}}, {}, {}}, b = a;
  auto two = r.alloc.schedule({constrained("j-c", 8, 1, a), constrained("j-d", 8, 1, b)}, kNow);
  EXPECT_EQ(two.placed.size(), 2u);
}

TEST(Constraints, ReservationStaysOnNodesTheJobMayUse) {
  Racks r;
  // Every card busy; the rack r2 ones end first, but the blocked job wants rack r1.
  for (const char* n : {"n1", "n2"})
    r.alloc.hold(std::string("j-long-") + n, {api::Allocation{n, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, kNow + 3'600'000);
  for (const char* n : {"n3", "n4"})
    r.alloc.hold(std::string("j-short-") + n, {api::Allocation{n, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, kNow + 60'000);
  api::NodeConstraints r1{{{"rack", "r1"}}, {}, {}};
  PendingJob blocked = constrained("j-r1", 8, 1, r1);
  blocked.time_limit_s = 600;
  auto res = r.alloc.schedule({blocked}, kNow);
  ASSERT_EQ(res.reservations.size(), 1u);
  const std::string node = res.reservations[0].allocations.at(0).node;
  EXPECT_TRUE(node == "n1" || node == "n2") << node;
  EXPECT_EQ(res.reservations[0].start_ms, kNow + 3'600'000);
}

TEST(Constraints, ReservationOfAGangHoldsItsListedNode) {
  Racks r;
  for (const char* n : {"n1", "n2", "n3"})
    r.alloc.hold(std::string("j-") + n, {api::Allocation{n, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, kNow + 60'000);
  r.alloc.hold("j-n4", {api::Allocation{"n4", 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, kNow + 3'600'000);
  api::NodeConstraints with_n4{{}, {"n4"}, {}};
  auto res = r.alloc.schedule({constrained("j-g", 8, 2, with_n4)}, kNow);
  ASSERT_EQ(res.reservations.size(), 1u);
  std::set<std::string> nodes;
  for (const auto& a : res.reservations[0].allocations) nodes.insert(a.node);
  EXPECT_TRUE(nodes.count("n4"));
  EXPECT_EQ(res.reservations[0].start_ms, kNow + 3'600'000);  // n4 frees last: the gang waits for it.
}

// Preemption: victims only on nodes the waiting job may use.
struct Preempt : Racks {
  std::vector<RunningJob> running;
  std::vector<ProjectLimits> limits;
  Preempt() {
    ProjectLimits mine;
    mine.name = "mine";
    mine.guaranteed["*"] = 16;
    limits = {mine};
  }
  void run(const std::string& id, const std::string& node, int64_t started) {
    alloc.hold(id, {api::Allocation{node, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, std::nullopt);
    running.push_back(RunningJob{id, -1, true, started});
  }
  PreemptionOutcome plan(const PendingJob& j) {
    return alloc.plan_preemption(PreemptionRequest{&j, running, &limits, kNow, 0});
  }
};

TEST(Constraints, PreemptionStopsOnlyJobsOnUsableNodes) {
  Preempt p;
  // The newest (the preferred victim) runs on n4, outside the selector.
  p.run("j-n1", "n1", 1000);
  p.run("j-n2", "n2", 2000);
  p.run("j-n3", "n3", 3000);
  p.run("j-n4", "n4", 9000);
  api::NodeConstraints r1{{{"rack", "r1"}}, {}, {}};
  PendingJob j = constrained("j-want", 8, 1, r1);
  j.project = 0;
  auto out = p.plan(j);
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-n2"});  // The newest on rack r1.
  EXPECT_EQ(out.plan->allocations.at(0).node, "n2");
  // Excluded nodes are never emptied for it either.
  api::NodeConstraints x{{}, {}, {"n1", "n2", "n3", "n4"}};
  PendingJob none = constrained("j-none", 8, 1, x);
  none.project = 0;
  EXPECT_FALSE(p.plan(none).plan);
}

TEST(Constraints, PreemptionForAGangTakesItsListedNode) {
  Preempt p;
  p.run("j-n1", "n1", 1000);
  p.run("j-n2", "n2", 2000);
  p.run("j-n3", "n3", 8000);
  p.run("j-n4", "n4", 9000);
  api::NodeConstraints with_n1{{}, {"n1"}, {}};
  PendingJob j = constrained("j-want", 8, 2, with_n1);
  j.project = 0;
  auto out = p.plan(j);
  ASSERT_TRUE(out.plan);
  std::set<std::string> victims(out.plan->victims.begin(), out.plan->victims.end());
  EXPECT_EQ(victims, (std::set<std::string>{"j-n1", "j-n4"}));  // n1 is listed; n4's job is the newest.
  EXPECT_EQ(out.plan->allocations.at(0).node, "n1");
}

}  // namespace
}  // namespace tessel::scheduler::testing
