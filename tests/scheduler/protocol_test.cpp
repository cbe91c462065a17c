// The agent protocol, with the test acting as a fake agent over raw HTTP.
#include <future>

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

TEST(AgentProtocol, LongPollGetsAssignmentThenReportsDriveTheJob) {
  Harness h;
  h.register_node("n1");
  auto first = h.desired("n1", 0, 0);
  const int64_t v0 = first["version"];
  EXPECT_TRUE(first["assignments"].empty());
  // Park a long poll, then submit: it must wake well within its 30 s wait.
  auto poll = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", h.service->port());
    c.set_read_timeout(60);
    auto t0 = std::chrono::steady_clock::now();
    auto r = c.Get(("/v1/agent/nodes/n1/assignments?version=" + std::to_string(v0) + "&wait_s=30").c_str());
    return std::make_pair(json::parse(r->body), std::chrono::steady_clock::now() - t0);
  });
  auto job = h.submit({{"command", {"python", "t.py"}}, {"devices", 2}, {"env", {{"A", "1"}}}});
  const std::string id = job["id"];
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto [ds, took] = poll.get();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_NE(ds["version"], v0);
  ASSERT_EQ(ds["assignments"].size(), 1u);
  auto a = ds["assignments"][0];
  EXPECT_EQ(a["id"], id + ".0.0");
  EXPECT_EQ(a["module_ids"].size(), 2u);
  EXPECT_EQ(a["master_addr"], "10.0.0.2");
  EXPECT_GE(a["master_port"], 29500);
  EXPECT_EQ(a["spec"]["env"]["A"], "1");
  // Same version again: waits; wait_s=0 answers at once with the same state.
  EXPECT_EQ(h.desired("n1", ds["version"], 0)["assignments"].size(), 1u);

  ASSERT_EQ(h.heartbeat("n1", json::array({report(a["id"], "running")}))->status, 200);
  EXPECT_EQ(h.job_state(id), "running");
  auto hb = Harness::body(h.heartbeat("n1", json::array({report(a["id"], "exited", 0)})));
  EXPECT_EQ(h.job_state(id), "succeeded");
  EXPECT_EQ(hb["acknowledged"], json::array({a["id"]}));
  auto done = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(done["exit_code"], 0);
  EXPECT_TRUE(done.contains("started_at"));
  EXPECT_TRUE(h.desired("n1", 0, 0)["assignments"].empty());
  // Cards are free again.
  EXPECT_EQ(Harness::body(h.get("/v1/inventory"))["models"][0]["free"], 8);
}

// A rank whose output passed its node's log cap: the job's reason and its last event
// say so, with the job's own rank number (node rank 1, local rank 1 of eight: rank 9).
TEST(AgentProtocol, LogsCappedAreSaidInTheReasonAndTheEvents) {
  Harness h;
  h.register_node("n1");
  h.register_node("n2");
  auto job = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodes", 2}, {"tasks_per_node", "device"}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  const json placed = Harness::body(h.get("/v1/jobs/" + id));
  for (const auto& a : placed["allocations"]) {
    const std::string aid = id + ".0." + std::to_string(a["rank"].get<int>());
    json r = report(aid, "exited", 0);
    if (a["rank"] == 1) r["logs_capped"] = {1};
    ASSERT_EQ(h.post("/v1/agent/report", {{"node", a["node"]}, {"tasks", {r}}})->status, 200);
  }
  ASSERT_TRUE(h.wait_state(id, "succeeded"));
  const std::string want = "output of rank 9 passed its node's log cap; the rest was dropped";
  EXPECT_EQ(Harness::body(h.get("/v1/jobs/" + id))["reason"], want);
  const json events = Harness::body(h.get("/v1/jobs/" + id + "/events"))["events"];
  EXPECT_EQ(events.back()["event"], "succeeded");
  EXPECT_EQ(events.back()["reason"], want);
}

// Every agent-protocol answer carries the leader epoch the scheduler leads with, so
// agents can refuse an old leader's; without replicas (epoch 0) it is absent.
TEST(AgentProtocol, AnswersCarryTheLeaderEpoch) {
  Harness h(std::nullopt, {}, 4);
  auto reg =
      h.post("/v1/agent/register",
             {{"node", "n1"}, {"address", "10.0.0.1"}, {"inventory", gaudi_inventory()}, {"tasks", json::array()}});
  ASSERT_TRUE(reg);
  ASSERT_EQ(reg->status, 200) << reg->body;
  EXPECT_EQ(Harness::body(reg)["epoch"], 4);
  EXPECT_EQ(Harness::body(h.heartbeat("n1", json::array()))["epoch"], 4);
  auto rep = h.post("/v1/agent/report", {{"node", "n1"}, {"tasks", json::array()}});
  ASSERT_TRUE(rep);
  EXPECT_EQ(Harness::body(rep)["epoch"], 4);
  EXPECT_EQ(h.desired("n1", 0, 0)["epoch"], 4);
  const int64_t v = h.desired("n1", 0, 0)["version"];
  auto woken = h.park_poll("n1", v);  // A parked poll's answer too.
  h.submit({{"command", {"x"}}, {"devices", 1}});
  ASSERT_EQ(woken.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(woken.get()["epoch"], 4);

  Harness single;
  single.register_node("n1");
  EXPECT_FALSE(single.desired("n1", 0, 0).contains("epoch"));
  EXPECT_FALSE(Harness::body(single.heartbeat("n1", json::array())).contains("epoch"));
}

// Past max_long_polls a poll is answered at once, told to come back later, and its
// connection closed, so the threads it would hold stay free for heartbeats and users.
TEST(AgentProtocol, LongPollsPastTheLimitAreToldToPollLater) {
  StateOptions so;
  so.max_long_polls = 1;
  Harness h(std::nullopt, so);
  h.register_node("n1");
  h.register_node("n2");
  const int64_t v1 = h.desired("n1", 0, 0)["version"], v2 = h.desired("n2", 0, 0)["version"];
  auto held = h.park_poll("n1", v1);
  ASSERT_TRUE(eventually([&] { return h.service->state().stats().long_polls_waiting == 1; }));

  auto shed = h.get("/v1/agent/nodes/n2/assignments?version=" + std::to_string(v2) + "&wait_s=30");
  ASSERT_TRUE(shed);
  ASSERT_EQ(shed->status, 200) << shed->body;
  EXPECT_EQ(shed->get_header_value("Connection"), "close");
  auto body = Harness::body(shed);
  EXPECT_EQ(body["version"], v2);
  EXPECT_EQ(body["poll_after_ms"], so.poll_after_ms);
  auto metrics = h.get("/metrics")->body;
  EXPECT_NE(metrics.find("\ntessel_agent_long_polls 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ntessel_agent_long_polls_max 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ntessel_agent_long_polls_shed_total 1\n"), std::string::npos) << metrics;

  // Two 8-card jobs: one per node, so the held poll wakes with its assignment.
  const std::string a = h.submit({{"command", {"x"}}, {"devices", 8}})["id"];
  const std::string b = h.submit({{"command", {"x"}}, {"devices", 8}})["id"];
  ASSERT_EQ(held.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto woke = held.get();
  EXPECT_FALSE(woke.contains("poll_after_ms")) << woke.dump();
  EXPECT_EQ(woke["assignments"].size(), 1u) << woke.dump();

  // A slot is free again: n2's next poll is held, not shed (once both placements are made).
  ASSERT_TRUE(h.wait_state(a, "assigned"));
  ASSERT_TRUE(h.wait_state(b, "assigned"));
  const int64_t v2b = h.desired("n2", 0, 0)["version"];
  EXPECT_FALSE(h.desired("n2", 0, 0).contains("poll_after_ms"));
  auto held2 = h.park_poll("n2", v2b);
  ASSERT_TRUE(eventually([&] { return h.service->state().stats().long_polls_waiting == 1; }));
  for (const auto& id : {a, b}) h.post("/v1/jobs/" + id + "/cancel", json::object());
  ASSERT_EQ(held2.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(held2.get().contains("poll_after_ms"));
  EXPECT_EQ(h.service->state().stats().long_polls_shed_total, 1u);
}

TEST(AgentProtocol, CancelRemovesAssignmentAndFreesCardsWhenGone) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"sleep", "100"}}, {"devices", 8}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  auto ds = h.desired("n1", 0, 0);
  ASSERT_EQ(ds["assignments"].size(), 1u);
  const std::string aid = ds["assignments"][0]["id"];
  ASSERT_EQ(h.heartbeat("n1", json::array({report(aid, "running")}))->status, 200);
  ASSERT_EQ(Harness::body(h.post("/v1/jobs/" + id + "/cancel", json::object()))["state"], "cancelled");
  auto after = h.desired("n1", ds["version"], 5);
  EXPECT_TRUE(after["assignments"].empty());
  // Still running on the node: the cards stay held (fenced) and a new job waits.
  auto next = h.submit({{"command", {"x"}}, {"devices", 8}});
  ASSERT_EQ(h.heartbeat("n1", json::array({report(aid, "running")}))->status, 200);
  EXPECT_EQ(h.job_state(next["id"]), "pending");
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n1"))["inventory"]["devices"][0]["job"], id);
  // The agent reports it gone: the fence is released and the next job placed.
  ASSERT_EQ(h.heartbeat("n1", json::array({report(aid, "exited", 143)}))->status, 200);
  EXPECT_TRUE(h.wait_state(next["id"], "assigned"));
  EXPECT_EQ(h.job_state(id), "cancelled");
}

TEST(AgentProtocol, FailureRequeuesWithRetriesThenFails) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"false"}}, {"devices", 1}, {"max_retries", 1}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".0.0", "exited", 3)}))->status, 200);
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["attempt"], 1);
  ASSERT_EQ(h.heartbeat("n1", json::array({report(id + ".1.0", "exited", 4)}))->status, 200);
  j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["exit_code"], 4);
}

TEST(AgentProtocol, FailedToStartFailsWithMessage) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"/nope"}}, {"max_retries", 3}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  json r = report(id + ".0.0", "failed_to_start");
  r["message"] = "exec: No such file or directory";
  ASSERT_EQ(h.heartbeat("n1", json::array({r}))->status, 200);
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "failed");
  EXPECT_NE(j["reason"].get<std::string>().find("No such file"), std::string::npos);
}

TEST(AgentProtocol, ResultNotRecordedFailsTheJobWithThatReason) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 1}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  json r = report(id + ".0.0", "exited");  // No exit code: how it ended is not known.
  r["message"] = "result not recorded: No space left on device";
  auto hb = Harness::body(h.heartbeat("n1", json::array({r})));
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["reason"], "result not recorded: No space left on device");
  EXPECT_FALSE(j.contains("exit_code") && !j["exit_code"].is_null()) << j.dump();
  EXPECT_EQ(hb["acknowledged"], json::array({id + ".0.0"}));
}

TEST(AgentProtocol, DegradedNodeGetsNoJobsUntilItRecovers) {
  Harness h;
  h.register_node("n1");
  auto degraded = [&](const std::string& why) {
    json body = {{"node", "n1"}, {"inventory", gaudi_inventory()}};
    if (!why.empty()) body["degraded"] = why;
    auto r = h.post("/v1/agent/heartbeat", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  };
  ASSERT_NO_FATAL_FAILURE(degraded("agent state dir: No space left on device"));
  auto node = Harness::body(h.get("/v1/nodes/n1"));
  EXPECT_EQ(node["state"], "degraded");
  EXPECT_EQ(node["degraded"], "agent state dir: No space left on device");
  EXPECT_EQ(Harness::body(h.get("/v1/inventory"))["nodes"]["degraded"], 1);
  auto job = h.submit({{"command", {"x"}}, {"devices", 1}});
  const std::string id = job["id"];
  // A scheduling pass left it pending, with a reason.
  ASSERT_TRUE(eventually([&] { return !Harness::body(h.get("/v1/jobs/" + id)).value("reason", "").empty(); }));
  EXPECT_EQ(h.job_state(id), "pending");
  ASSERT_NO_FATAL_FAILURE(degraded(""));
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  node = Harness::body(h.get("/v1/nodes/n1"));
  EXPECT_EQ(node["state"], "ready");
  EXPECT_FALSE(node.contains("degraded"));
}

TEST(AgentProtocol, DegradedReasonMustBeAShortString) {
  Harness h;
  h.register_node("n1");
  for (const json& bad : {json(7), json(std::string(1025, 'x'))}) {
    auto r = h.post("/v1/agent/heartbeat", {{"node", "n1"}, {"inventory", gaudi_inventory()}, {"degraded", bad}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
  }
}

TEST(AgentProtocol, GangJobOneRankFailsOthersAreKilled) {
  Harness h;
  h.register_node("n1");
  h.register_node("n22");
  auto job = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodes", 2}});
  const std::string id = job["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  auto j = Harness::body(h.get("/v1/jobs/" + id));
  ASSERT_EQ(j["allocations"].size(), 2u);
  std::string n0 = j["allocations"][0]["node"], n1 = j["allocations"][1]["node"];
  int r0 = j["allocations"][0]["rank"], r1 = j["allocations"][1]["rank"];
  ASSERT_EQ(h.heartbeat(n0, json::array({report(id + ".0." + std::to_string(r0), "running")}))->status, 200);
  ASSERT_EQ(h.heartbeat(n1, json::array({report(id + ".0." + std::to_string(r1), "running")}))->status, 200);
  EXPECT_EQ(h.job_state(id), "running");
  ASSERT_EQ(h.heartbeat(n1, json::array({report(id + ".0." + std::to_string(r1), "exited", 1)}))->status, 200);
  EXPECT_EQ(h.job_state(id), "failed");
  EXPECT_TRUE(h.desired(n0, 0, 0)["assignments"].empty());  // The surviving rank is killed.
}

}  // namespace
}  // namespace tessel::scheduler::testing

namespace tessel::scheduler::testing {
namespace {

// With every card busy a submission cannot fit, so the scheduler skips its pass
// over the queue (passes cost O(queue)) but still gives the job its reason within
// a second, and the report that frees cards runs a full pass at once.
TEST(AgentProtocol, SubmissionsToAFullClusterGetReasonsAndRunOnceCardsFree) {
  Harness h;
  h.register_node("n1");
  auto a = h.submit({{"command", {"x"}}, {"devices", 8}});
  ASSERT_TRUE(h.wait_state(a["id"], "assigned"));
  auto b = h.submit({{"command", {"x"}}, {"devices", 8}});
  auto c = h.submit({{"command", {"x"}}, {"devices", 1}});
  for (const auto& id : {b["id"].get<std::string>(), c["id"].get<std::string>()})
    EXPECT_TRUE(eventually([&] { return !Harness::body(h.get("/v1/jobs/" + id)).value("reason", "").empty(); }))
        << id << " never got a reason";
  const std::string aid = a["id"].get<std::string>() + ".0.0";
  auto r = h.post("/v1/agent/report", {{"node", "n1"}, {"tasks", {report(aid, "exited", 0)}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(h.wait_state(a["id"], "succeeded"));
  EXPECT_TRUE(h.wait_state(b["id"], "assigned"));
}

}  // namespace
}  // namespace tessel::scheduler::testing
