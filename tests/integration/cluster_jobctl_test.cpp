// Job control (issue 31) with the real scheduler and agents (fake hl-smi, 8 HL-225
// cards each): a job held behind a busy node is passed over by a later job, stays held
// across a scheduler restart (kill -9), and runs once released; a signal reaches
// every rank of a two-node gang; a warning signal comes before the time limit, and a
// job ended by its time limit fails with that reason even when it exits 0; a requeued
// job is stopped, runs again and succeeds without using a retry; a priority update moves a
// job ahead of one submitted before it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <httplib.h>

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

// Each rank waits for SIGUSR1 and exits 0 on it: the gang succeeds only if both got it.
TEST(ClusterJobControl, ASignalReachesEveryRankOfAGang) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  c.start_agent("n2");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  json gang = eight_cards("trap 'exit 0' USR1; touch trapping; while :; do sleep 0.05; done");
  gang["nodes"] = 2;
  const std::string id = c.submit(gang)["id"];
  int status = 0;
  c.get("/v1/jobs/" + id + "/signal", &status);
  EXPECT_EQ(status, 405);
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  // Running means its processes started; each shell has set its trap once it says so.
  ASSERT_TRUE(eventually(
      [&] {
        int ready = 0;
        for (const char* node : {"n1", "n2"})
          for (int rank : {0, 1}) ready += std::filesystem::exists(c.work_dir(node, id, rank) + "/trapping") ? 1 : 0;
        return ready == 2;
      },
      20s));
  EXPECT_EQ(c.post("/v1/jobs/" + id + "/signal", {{"name", "KILL"}}), 400);
  ASSERT_EQ(c.post("/v1/jobs/" + id + "/signal", {{"name", "USR1"}}), 200);
  auto done = c.wait_job(id, {"succeeded", "failed"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  const json events = c.get("/v1/jobs/" + id + "/events")["events"];
  bool signalled = false;
  for (const auto& e : events)
    if (e["event"] == "signalled" && e.value("reason", "") == "SIGUSR1 to every rank") signalled = true;
  EXPECT_TRUE(signalled) << events.dump();
}

// The job writes `warned` on SIGUSR1 (3 s before its 6 s limit) and exits 0 on the
// SIGTERM at the limit: it fails all the same, with the time limit as its reason.
TEST(ClusterJobControl, AWarningSignalBeforeTheTimeLimitThenFailedWithTheLimitAsReason) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  json spec = eight_cards("trap 'touch warned' USR1; trap 'exit 0' TERM; while :; do sleep 0.05; done");
  spec["time_limit_s"] = 6;
  spec["kill_grace_s"] = 1;
  spec["max_retries"] = 2;  // A time limit is never retried.
  spec["signal"] = {{"name", "USR1"}, {"before_s", 3}};
  const std::string id = c.submit(spec)["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(c.work_dir("n1", id) + "/warned"); }, 20s));
  auto done = c.wait_job(id, {"failed", "succeeded"}, 30s);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "failed");
  EXPECT_EQ(done->value("reason", ""), "time limit of 6s reached") << done->dump();
  EXPECT_EQ((*done)["attempt"], 0);

  spec["signal"]["before_s"] = 7;  // Past the time limit.
  auto r = c.rest().post("/v1/jobs", spec);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body["error"].value("field", ""), "signal.before_s") << r.text;
}

// The first run marks `once` and runs until stopped; the second finds it and exits 0.
TEST(ClusterJobControl, ARequeuedJobRunsTwiceAndSucceeds) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  const std::string mark = c.root() + "/once";
  const std::string id = c.submit(
      eight_cards("if [ -e " + mark + " ]; then exit 0; fi; touch " + mark + "; while :; do sleep 0.05; done"))["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(mark); }, 20s));
  ASSERT_EQ(c.post("/v1/jobs/" + id + "/requeue", json::object()), 200);
  auto done = c.wait_job(id, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  EXPECT_EQ((*done)["attempt"], 1);
  EXPECT_EQ((*done)["requeues"], 1);
  const json events = c.get("/v1/jobs/" + id + "/events")["events"];
  bool requeued = false;
  for (const auto& e : events)
    if (e["event"] == "requeued" && e.value("by", "") == "anonymous" && e["attempt"] == 0) requeued = true;
  EXPECT_TRUE(requeued) << events.dump();
}

TEST(ClusterJobControl, APriorityUpdateMovesAJobUpTheQueue) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  const std::string busy = c.submit(eight_cards("while [ ! -e go ]; do sleep 0.05; done"))["id"];
  ASSERT_TRUE(c.wait_job(busy, {"running"}));
  const std::string first = c.submit(eight_cards("true"))["id"];
  const std::string second = c.submit(eight_cards("true"))["id"];
  httplib::Client http("127.0.0.1", c.port());
  auto r = http.Patch(("/v1/jobs/" + second).c_str(), json{{"priority", 10}}.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["spec"]["priority"], 10);
  ASSERT_TRUE(c.wait_reason(first, "waiting"));  // The pass has run since.
  EXPECT_EQ(c.get("/v1/jobs/" + second).value("queue_position", 0), 1);
  { std::ofstream(c.work_dir("n1", busy) + "/go") << "go\n"; }
  auto a = c.wait_job(first, {"succeeded"});
  auto b = c.wait_job(second, {"succeeded"});
  ASSERT_TRUE(a && b);
  EXPECT_LT((*b)["started_at"].get<std::string>(), (*a)["started_at"].get<std::string>());
}

}  // namespace
