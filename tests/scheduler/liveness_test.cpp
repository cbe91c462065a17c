// Liveness with the FakeClock: nodes go down after the heartbeat timeout, their
// jobs are requeued (attempt+1) and their cards stay fenced until the node's
// report shows the old tasks gone.
#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

TEST(Liveness, NodeDownRequeuesJobAndFencesCardsUntilConfirmed) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 8}, {"max_retries", 2}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".0.0", "running")}))->status, 200);

  h.clock.advance_ms(14'000);
  h.service->state().check_liveness();
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["state"], "ready");
  h.clock.advance_ms(1'000);
  h.service->state().check_liveness();
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["state"], "down");
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j["attempt"], 1);

  // Back up, still running the old attempt: cards stay fenced, the job waits.
  ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".0.0", "running")}))->status, 200);
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["state"], "ready");
  h.service->state().schedule_pass();
  EXPECT_EQ(h.job_state(id), "pending");
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["inventory"]["devices"][3]["job"], id);
  // The report no longer lists it: released, and attempt 1 is placed.
  ASSERT_EQ(h.heartbeat("n1", json::array())->status, 200);
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  EXPECT_EQ(h.desired("n1", 0, 0)["assignments"][0]["id"], id + ".1.0");
}

TEST(Liveness, NoRetriesLeftFailsWithNodeDownReason) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 1}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  h.clock.advance_ms(15'000);
  h.service->state().check_liveness();
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["reason"], "node n1 down");
  // A heartbeat from an unknown node is 404 so the agent re-registers.
  EXPECT_EQ(h.heartbeat("ghost", json::array())->status, 404);
}

TEST(Liveness, HeartbeatsKeepNodeUp) {
  Harness h;
  h.register_node("n1");
  for (int i = 0; i < 5; ++i) {
    h.clock.advance_ms(10'000);
    ASSERT_EQ(h.heartbeat("n1", json::array())->status, 200);
    h.service->state().check_liveness();
  }
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["state"], "ready");
}

TEST(Liveness, TimeLimitBackstopFailsOverdueJob) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 1}, {"time_limit_s", 60}, {"kill_grace_s", 5}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".0.0", "running")}))->status, 200);
  ASSERT_EQ(h.job_state(id), "running");
  for (int i = 0; i < 8; ++i) {  // 80 s: past 60 + 5 + 15, heartbeats keep the node up.
    h.clock.advance_ms(10'000);
    ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".0.0", "running")}))->status, 200);
    h.service->state().check_liveness();
  }
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["reason"], "time limit of 60s reached");
  EXPECT_TRUE(h.desired("n1", 0, 0)["assignments"].empty());
}

}  // namespace
}  // namespace tessel::scheduler::testing
