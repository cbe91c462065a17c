// Job control (issue 31) with the real scheduler and agent (fake hl-smi, 8 HL-225
// cards): a job held behind a busy node is passed over by a later job, stays held
// across a scheduler restart (kill -9), and runs once released.
#include <gtest/gtest.h>

#include <fstream>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

json eight_cards(const std::string& script) { return {{"command", {"/bin/sh", "-c", script}}, {"devices", 8}}; }

TEST(ClusterJobControl, AHeldJobWaitsBehindABusyNodeSurvivesARestartAndRunsOnceReleased) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  const std::string busy = c.submit(eight_cards("while [ ! -e go ]; do sleep 0.05; done"))["id"];
  ASSERT_TRUE(c.wait_job(busy, {"running"}));
  const std::string held = c.submit(eight_cards("true"))["id"];
  ASSERT_EQ(c.post("/v1/jobs/" + held + "/hold", json::object()), 200);
  const std::string later = c.submit(eight_cards("true"))["id"];

  c.stop_scheduler(SIGKILL);
  c.start_scheduler();
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  json j = c.get("/v1/jobs/" + held);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j.value("held_by", ""), "anonymous") << j.dump();
  EXPECT_EQ(j.value("reason", ""), "held by anonymous");

  // The busy job ends: the later job takes the cards, the held one (first in the queue) waits.
  { std::ofstream(c.work_dir("n1", busy) + "/go") << "go\n"; }
  ASSERT_TRUE(c.wait_job(busy, {"succeeded"}));
  ASSERT_TRUE(c.wait_job(later, {"succeeded"}));
  j = c.get("/v1/jobs/" + held);
  EXPECT_EQ(j["state"], "pending");
  EXPECT_EQ(j.value("reason", ""), "held by anonymous");

  ASSERT_EQ(c.post("/v1/jobs/" + held + "/release", json::object()), 200);
  ASSERT_TRUE(c.wait_job(held, {"succeeded"}));
  const json events = c.get("/v1/jobs/" + held + "/events")["events"];
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e["event"].get<std::string>() + "/" + e.value("by", ""));
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[1], "held/anonymous");
  EXPECT_EQ(names[2], "released/anonymous");
  EXPECT_EQ(names.back(), "succeeded/");
}

}  // namespace
