#include "tessel/agent/reconcile.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;

static api::Assignment with_id(const std::string& id) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  a.id = id;
  return a;
}

TEST(Reconcile, StartsNewKillsUnlisted) {
  std::vector<api::Assignment> desired = {with_id("a"), with_id("b")};
  std::vector<KnownTask> known = {{"b", true, false}, {"c", true, false}, {"d", false, false}};
  auto plan = reconcile(desired, known, {"b", "c", "d"});
  ASSERT_EQ(plan.start.size(), 1u);
  EXPECT_EQ(plan.start[0].id, "a");
  EXPECT_EQ(plan.kill, std::vector<std::string>{"c"});
}

TEST(Reconcile, NeverStartsTwiceEvenWhenForgotten) {
  auto plan = reconcile({with_id("old")}, {}, {"old"});
  EXPECT_TRUE(plan.start.empty());
}

TEST(Reconcile, DoesNotResendKill) {
  auto plan = reconcile({}, {{"x", true, true}}, {"x"});
  EXPECT_TRUE(plan.kill.empty());
}

TEST(Reconcile, DuplicateListedOnce) {
  auto plan = reconcile({with_id("a"), with_id("a")}, {}, {});
  EXPECT_EQ(plan.start.size(), 1u);
}

TEST(Reconcile, EmptyDesiredKillsAllRunning) {
  auto plan = reconcile({}, {{"a", true, false}, {"b", true, false}}, {"a", "b"});
  EXPECT_EQ(plan.kill.size(), 2u);
}
