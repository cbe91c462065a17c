// Scheduler and agents in one process (tests/support/in_process_cluster.hpp), with
// heartbeats an hour apart: launch, exit, failure, cancel, agent loss and return,
// requeue and fencing all happen through events, in milliseconds.
#include <gtest/gtest.h>

#include <csignal>

#include "../support/in_process_cluster.hpp"

namespace tessel::testkit {
namespace {

using nlohmann::json;

json eight_cards(int max_retries = 0) { return {{"command", {"train"}}, {"devices", 8}, {"max_retries", max_retries}}; }

// The node a job's rank 0 was placed on.
std::string node_of(const json& job) { return job["allocations"][0]["node"]; }

TEST(InProcessCluster, TaskExitFreesTheCardsAndTheNextJobStartsWithoutAHeartbeat) {
  InProcessCluster c;
  c.start_agent("n1");
  const std::string a = c.submit(eight_cards())["id"], b = c.submit(eight_cards())["id"];
  ASSERT_TRUE(c.wait_launched("n1", a + ".0.0"));
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  EXPECT_EQ(c.job(b)["state"], "pending");
  c.end_task("n1", a + ".0.0", 0);
  ASSERT_TRUE(c.wait_job_state(a, "succeeded"));
  ASSERT_TRUE(c.wait_launched("n1", b + ".0.0"));
  ASSERT_TRUE(c.wait_job_state(b, "running"));
}

TEST(InProcessCluster, FailedTaskFailsItsJobWithTheExitCode) {
  InProcessCluster c;
  c.start_agent("n1");
  const std::string a = c.submit(eight_cards())["id"];
  ASSERT_TRUE(c.wait_launched("n1", a + ".0.0"));
  c.end_task("n1", a + ".0.0", 3);
  ASSERT_TRUE(c.wait_job_state(a, "failed"));
  EXPECT_EQ(c.job(a)["exit_code"], 3);
}

TEST(InProcessCluster, CancelKillsTheTaskAndItsCardsStayFencedUntilItIsGone) {
  InProcessCluster c;
  c.start_agent("n1");
  const std::string a = c.submit(eight_cards())["id"], b = c.submit(eight_cards())["id"];
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  c.cancel(a);
  ASSERT_TRUE(c.wait_job_state(a, "cancelled"));
  ASSERT_TRUE(eventually([&] { return c.stops("n1") == 1; }));  // The agent asked the supervisor to stop.
  // Fenced: the cancelled task may still hold the cards, so b waits.
  EXPECT_EQ(c.job(b)["state"], "pending");
  EXPECT_EQ(c.launched("n1").size(), 1u);
  c.end_task("n1", a + ".0.0", 0, SIGTERM);
  ASSERT_TRUE(c.wait_launched("n1", b + ".0.0"));
  ASSERT_TRUE(c.wait_job_state(b, "running"));
}

TEST(InProcessCluster, LostAgentsJobIsRequeuedElsewhereAndItsStaleTaskKilledWhenItReturns) {
  scheduler::StateOptions so;
  so.heartbeat_timeout_ms = 15'000;
  InProcessCluster c(so);
  c.start_agent("n1");
  c.start_agent("n2");
  const std::string a = c.submit(eight_cards(/*max_retries=*/1))["id"];
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  const std::string lost = node_of(c.job(a)), other = lost == "n1" ? "n2" : "n1";
  ASSERT_TRUE(c.wait_launched(lost, a + ".0.0"));
  c.stop_agent(lost);  // Its task keeps running, as agents' tasks do.

  c.clock().advance_ms(20'000);
  c.heartbeat(other);
  c.service().state().check_liveness();
  ASSERT_TRUE(eventually([&] { return c.service().state().node(lost)->state == "down"; }));
  // Attempt 1 runs on the other node; attempt 0's cards on the lost node stay fenced.
  ASSERT_TRUE(c.wait_launched(other, a + ".1.0"));
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  EXPECT_EQ(c.job(a)["attempt"], 1);
  EXPECT_EQ(c.service().state().node(lost)->job_by_module.size(), 8u);

  // The lost agent returns: told its task is no longer wanted, it stops it; once
  // the task is gone the fence ends and the cards are free again.
  c.start_agent(lost);
  ASSERT_TRUE(eventually([&] { return c.stops(lost) == 1; }));
  c.end_task(lost, a + ".0.0", 0, SIGTERM);
  ASSERT_TRUE(eventually([&] { return c.service().state().node(lost)->job_by_module.empty(); }));
  EXPECT_EQ(c.service().state().node(lost)->state, "ready");
}

TEST(InProcessCluster, GangStartsOnTwoNodesAndEndsWhenBothRanksEnd) {
  InProcessCluster c;
  c.start_agent("n1");
  c.start_agent("n2");
  json spec = eight_cards();
  spec["nodes"] = 2;
  const std::string a = c.submit(spec)["id"];
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  const json job = c.job(a);
  const std::string r0 = job["allocations"][0]["node"], r1 = job["allocations"][1]["node"];
  const int rank0 = job["allocations"][0]["rank"], rank1 = job["allocations"][1]["rank"];
  c.end_task(r0, a + ".0." + std::to_string(rank0), 0);
  ASSERT_TRUE(eventually([&] { return c.job(a)["state"] == "running"; }));
  c.end_task(r1, a + ".0." + std::to_string(rank1), 0);
  ASSERT_TRUE(c.wait_job_state(a, "succeeded"));
}

TEST(InProcessCluster, DependentJobStartsWhenItsDependencySucceedsAndItsOwnDependentIsCancelledWhenItFails) {
  InProcessCluster c;
  c.start_agent("n1");
  const std::string a = c.submit(eight_cards())["id"];
  json after_a = eight_cards(), after_b = eight_cards();
  after_a["after_ok"] = {a};
  const std::string b = c.submit(after_a)["id"];
  after_b["after_ok"] = {b};
  const std::string d = c.submit(after_b)["id"];
  ASSERT_TRUE(c.wait_job_state(a, "running"));
  EXPECT_EQ(c.job(b)["reason"], "waiting for " + a);
  c.end_task("n1", a + ".0.0", 0);
  ASSERT_TRUE(c.wait_launched("n1", b + ".0.0"));
  ASSERT_TRUE(c.wait_job_state(b, "running"));
  EXPECT_EQ(c.job(d)["reason"], "waiting for " + b);
  c.end_task("n1", b + ".0.0", 1);
  ASSERT_TRUE(c.wait_job_state(b, "failed"));
  EXPECT_EQ(c.job(d)["state"], "cancelled");  // In the same change as b's end.
  EXPECT_EQ(c.job(d)["reason"], "dependency " + b + " failed");
  EXPECT_EQ(c.launched("n1").size(), 2u);
}

TEST(InProcessCluster, AnArrayRunsAtMostParallelElementsAtOnceEachWithItsArrayEnvironment) {
  InProcessCluster c;
  c.start_agent("n1");  // Eight cards: room for all six elements, were it not for the limit.
  const std::string p =
      c.submit({{"command", {"work"}}, {"devices", 1}, {"array", {{"count", 6}, {"parallel", 2}}}})["id"];
  size_t ended = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string element = p + "_" + std::to_string(i), aid = element + ".0.0";
    ASSERT_TRUE(c.wait_launched("n1", aid));
    ASSERT_TRUE(c.wait_job_state(element, "running"));
    EXPECT_LE(c.launched("n1").size() - ended, 2u);  // Launched and not yet ended.
    const json states = c.job(p)["array"]["states"];
    EXPECT_LE(states["assigned"].get<int>() + states["running"].get<int>(), 2) << states.dump();
    auto env = c.task_env("n1", aid);
    EXPECT_EQ(env["TESSEL_JOB_ID"], element);
    EXPECT_EQ(env["TESSEL_ARRAY_ID"], p);
    EXPECT_EQ(env["TESSEL_ARRAY_INDEX"], std::to_string(i));
    EXPECT_EQ(env["TESSEL_ARRAY_COUNT"], "6");
    c.end_task("n1", aid, 0);
    ++ended;
    ASSERT_TRUE(c.wait_job_state(element, "succeeded"));
  }
  ASSERT_TRUE(c.wait_job_state(p, "succeeded"));
  EXPECT_EQ(c.job(p)["array"]["states"]["succeeded"], 6);
  EXPECT_EQ(c.launched("n1").size(), 6u);
}

}  // namespace
}  // namespace tessel::testkit
