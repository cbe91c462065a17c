// Accounting against the real binaries: a job run by a real agent is in GET /v1/usage,
// and still is, with the same card-seconds, after the scheduler is killed and started
// again on its database.
#include <gtest/gtest.h>
#include <signal.h>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

TEST(ClusterUsage, UsageOfARealJobSurvivesASchedulerRestart) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  const json job = c.submit({{"command", {"sleep", "0.3"}}, {"devices", 2}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"succeeded"}));
  const json before = c.get("/v1/usage")["usage"];
  ASSERT_EQ(before.size(), 1u) << before.dump();
  EXPECT_EQ(before[0]["project"], "default");
  EXPECT_EQ(before[0]["jobs"], 1);
  EXPECT_GT(before[0]["card_seconds"].get<double>(), 0.0);
  EXPECT_EQ(c.get("/v1/usage?by=user")["usage"][0]["card_seconds"], before[0]["card_seconds"]);
  c.stop_scheduler(SIGKILL);
  c.start_scheduler();
  EXPECT_EQ(c.get("/v1/usage")["usage"], before);
}

}  // namespace
