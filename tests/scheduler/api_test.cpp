// REST API: every error path and role, against the in-process service.
#include <set>

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

TokenTable tokens() {
  return tokens_from("# test tokens\nadmintok admin root\nalicetok user alice\nbobtok user bob\n\nagenttok agent n1\n");
}

void expect_error(const httplib::Result& r, int status, const std::string& code, const std::string& field = "") {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  auto j = Harness::body(r);
  ASSERT_TRUE(j.is_object()) << r->body;
  EXPECT_EQ(j["error"]["code"], code) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  if (!field.empty()) {
    EXPECT_EQ(j["error"]["field"], field) << r->body;
  }
}

TEST(SchedulerApi, SubmitReturnsJobAndItIsListedNewestFirst) {
  Harness h;
  auto a = h.submit({{"command", {"python", "train.py"}}, {"devices", 2}, {"name", "a"}});
  auto b = h.submit({{"command", {"true"}}});
  EXPECT_EQ(a["state"], "pending");
  EXPECT_EQ(a["user"], "anonymous");
  EXPECT_LT(a["id"].get<std::string>(), b["id"].get<std::string>());
  auto list = Harness::body(h.get("/v1/jobs?limit=1"));
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["id"], b["id"]);
  ASSERT_TRUE(list.contains("next"));
  auto page2 = Harness::body(h.get("/v1/jobs?limit=1&after=" + list["next"].get<std::string>()));
  ASSERT_EQ(page2["jobs"].size(), 1u);
  EXPECT_EQ(page2["jobs"][0]["id"], a["id"]);
  EXPECT_FALSE(page2.contains("next"));
  EXPECT_EQ(Harness::body(h.get("/v1/jobs/" + a["id"].get<std::string>()))["name"], "a");
  // Pending jobs carry the allocator's reason once a pass ran.
  EXPECT_TRUE(
      eventually([&] { return Harness::body(h.get("/v1/jobs/" + a["id"].get<std::string>())).contains("reason"); }));
}

TEST(SchedulerApi, BadSubmissionsAre4xxAndStoreNothing) {
  Harness h;
  expect_error(h.client->Post("/v1/jobs", "{not json", "application/json"), 400, "invalid_argument");
  expect_error(h.client->Post("/v1/jobs", "[1,2]", "application/json"), 400, "invalid_argument");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"devices", 3}, {"vendor", "habana"}}), 400, "invalid_argument",
               "devices");
  expect_error(h.post("/v1/jobs", {{"command", json::array()}}), 400, "invalid_argument", "command");
  expect_error(h.post("/v1/jobs", {{"command", "ls"}}), 400, "invalid_argument", "command");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"devices", "2"}}), 400, "invalid_argument", "devices");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"bogus", 1}}), 400, "invalid_argument", "bogus");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"name", std::string(10000, 'n')}}), 400, "invalid_argument",
               "name");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"env", {{"RANK", "1"}}}}), 400, "invalid_argument");
  std::string huge = R"({"command":["x"],"name":")" + std::string(2 << 20, 'a') + "\"}";
  auto r = h.client->Post("/v1/jobs", huge, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(Harness::body(h.get("/v1/jobs"))["jobs"].size(), 0u);
}

TEST(SchedulerApi, QueryAndPathErrors) {
  Harness h;
  expect_error(h.get("/v1/jobs?limit=0"), 400, "invalid_argument", "limit");
  expect_error(h.get("/v1/jobs?limit=1001"), 400, "invalid_argument", "limit");
  expect_error(h.get("/v1/jobs?limit=abc"), 400, "invalid_argument", "limit");
  expect_error(h.get("/v1/jobs?state=sleeping"), 400, "invalid_argument", "state");
  expect_error(h.get("/v1/jobs?after=zzz"), 400, "invalid_argument", "after");
  expect_error(h.get("/v1/jobs/j-00000099"), 404, "not_found");
  expect_error(h.post("/v1/jobs/j-00000099/cancel", json::object()), 404, "not_found");
  expect_error(h.get("/v1/nodes/nope"), 404, "not_found");
  expect_error(h.post("/v1/nodes/nope/drain", json::object()), 404, "not_found");
  expect_error(h.get("/v1/no/such/thing"), 404, "not_found");
  expect_error(h.get("/v1/jobs/j-00000099/logs?rank=0"), 404, "not_found");
  expect_error(
      h.post("/v1/agent/heartbeat", {{"node", "ghost"}, {"inventory", gaudi_inventory()}, {"tasks", json::array()}}),
      404, "not_found");
  expect_error(h.get("/v1/agent/nodes/ghost/assignments?version=0&wait_s=0"), 404, "not_found");
  expect_error(h.post("/v1/agent/register", {{"node", "x"}}), 400, "invalid_argument");
  expect_error(h.post("/v1/agent/register", {{"node", "../x"}, {"address", "a"}, {"inventory", gaudi_inventory()}}),
               400, "invalid_argument", "node");
}

TEST(SchedulerApi, RolesAndTokens) {
  Harness h(tokens());
  EXPECT_EQ(h.get("/healthz")->status, 200);
  EXPECT_EQ(h.get("/metrics")->status, 200);
  expect_error(h.get("/v1/jobs"), 401, "unauthenticated");
  expect_error(h.get("/v1/jobs", "wrong"), 401, "unauthenticated");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}}), 401, "unauthenticated");
  auto job = h.submit({{"command", {"x"}}}, "alicetok");
  EXPECT_EQ(job["user"], "alice");
  const std::string id = job["id"];
  EXPECT_EQ(h.get("/v1/jobs/" + id, "bobtok")->status, 200);  // Users read everything.
  expect_error(h.post("/v1/jobs/" + id + "/cancel", json::object(), "bobtok"), 403, "permission_denied");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}}, "agenttok"), 403, "permission_denied");
  expect_error(h.get("/v1/jobs", "agenttok"), 403, "permission_denied");
  expect_error(h.post("/v1/agent/register", {{"node", "n1"}}, "alicetok"), 403, "permission_denied");
  expect_error(h.get("/v1/agent/nodes/n1/assignments?wait_s=0", "alicetok"), 403, "permission_denied");
  h.register_node("n1", json::array(), "agenttok");
  expect_error(h.post("/v1/nodes/n1/drain", json::object(), "alicetok"), 403, "permission_denied");
  auto drained = h.post("/v1/nodes/n1/drain", json::object(), "admintok");
  ASSERT_EQ(drained->status, 200);
  EXPECT_EQ(Harness::body(drained)["state"], "draining");
  EXPECT_EQ(Harness::body(h.post("/v1/nodes/n1/undrain", json::object(), "admintok"))["state"], "ready");
  auto c = h.post("/v1/jobs/" + id + "/cancel", json::object(), "alicetok");
  ASSERT_EQ(c->status, 200);
  EXPECT_EQ(Harness::body(c)["state"], "cancelled");
  // Idempotent, and admins may cancel anything.
  EXPECT_EQ(Harness::body(h.post("/v1/jobs/" + id + "/cancel", json::object(), "admintok"))["state"], "cancelled");
}

// An agent token is bound to its node (issue 16): it registers, heartbeats, polls and
// reports for that node only; another node's work cannot be moved, read or finished.
TEST(SchedulerApi, AnAgentTokenActsForItsOwnNodeOnly) {
  auto t = parse_tokens("admintok admin root\nn1tok agent n1\nn2tok agent n2\n");
  ASSERT_TRUE(t.ok());
  Harness h(*t);
  h.register_node("n1", json::array(), "n1tok");
  h.register_node("n2", json::array(), "n2tok");
  auto job = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodes", 2}}, "admintok");
  const std::string id = job["id"];
  // n1's token may not re-register n2 (at its own address), heartbeat or report for it, or read its assignments.
  expect_error(h.post("/v1/agent/register",
                      {{"node", "n2"},
                       {"address", "10.9.9.9"},
                       {"agent_port", 1},
                       {"inventory", gaudi_inventory()},
                       {"tasks", json::array()}},
                      "n1tok"),
               403, "permission_denied");
  expect_error(h.heartbeat("n2", json::array(), "n1tok"), 403, "permission_denied");
  expect_error(
      h.post("/v1/agent/report",
             {{"node", "n2"},
              {"tasks", json::array({{{"assignment_id", id + ".0.1"}, {"state", "exited"}, {"exit_code", 0}}})}},
             "n1tok"),
      403, "permission_denied");
  auto poll = h.get("/v1/agent/nodes/n2/assignments?wait_s=0", "n1tok");
  expect_error(poll, 403, "permission_denied");
  EXPECT_NE(poll->body.find("not n2"), std::string::npos) << poll->body;
  EXPECT_EQ(Harness::body(h.get("/v1/nodes/n2", "admintok"))["address"], "10.0.0.2");
  // Its own node, and an admin for any node, still may.
  EXPECT_EQ(h.get("/v1/agent/nodes/n1/assignments?wait_s=0", "n1tok")->status, 200);
  EXPECT_EQ(h.heartbeat("n1", json::array(), "n1tok")->status, 200);
  EXPECT_EQ(h.get("/v1/agent/nodes/n2/assignments?wait_s=0", "admintok")->status, 200);
}

TEST(SchedulerApi, FailedWriteIs503AndStoresNothingReadsStillServed) {
  Harness h;
  auto a = h.submit({{"command", {"x"}}});
  EXPECT_EQ(Harness::body(h.get("/healthz"))["storage"], "ok");
  h.store->fail_writes = true;
  auto refused = h.post("/v1/jobs", {{"command", {"y"}}});
  expect_error(refused, 503, "unavailable");
  EXPECT_NE(refused->body.find("storage unavailable: the job was not saved"), std::string::npos) << refused->body;
  expect_error(h.post("/v1/jobs/" + a["id"].get<std::string>() + "/cancel", json::object()), 503, "unavailable");
  auto list = Harness::body(h.get("/v1/jobs"));
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["state"], "pending");
  // Liveness stays 200 (a restart would not mend the disk); it says storage is failing.
  auto health = h.get("/healthz");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Harness::body(health)["storage"], "failing");
  auto metrics = h.get("/metrics")->body;
  EXPECT_NE(metrics.find("\ntessel_store_write_failures_total 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\ntessel_store_healthy 0\n"), std::string::npos);
  h.store->fail_writes = false;
  EXPECT_EQ(Harness::body(h.post("/v1/jobs/" + a["id"].get<std::string>() + "/cancel", json::object()))["state"],
            "cancelled");
  EXPECT_EQ(Harness::body(h.get("/healthz"))["storage"], "ok");
}

TEST(SchedulerApi, NodesAndInventoryViews) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 4}});
  ASSERT_TRUE(h.wait_state(job["id"], "assigned"));
  auto n = Harness::body(h.get("/v1/nodes/n1"));
  EXPECT_EQ(n["state"], "ready");
  int held = 0;
  for (const auto& d : n["inventory"]["devices"])
    if (d["job"] == job["id"]) ++held;
  EXPECT_EQ(held, 4);
  EXPECT_EQ(n["free_groups"]["4"].size(), 1u);
  auto inv = Harness::body(h.get("/v1/inventory"));
  ASSERT_EQ(inv["models"].size(), 1u);
  EXPECT_EQ(inv["models"][0]["model"], "HL-225");
  EXPECT_EQ(inv["models"][0]["cards"], 8);
  EXPECT_EQ(inv["models"][0]["free"], 4);
  EXPECT_EQ(inv["models"][0]["free_groups"]["4"], 1);
  EXPECT_EQ(inv["nodes"]["ready"], 1);
  EXPECT_EQ(Harness::body(h.get("/v1/nodes"))["nodes"].size(), 1u);
}

TEST(SchedulerApi, AListingOfBigSpecsEndsEarlyByBytesAndTheCursorReachesEveryJob) {
  Harness h;
  // 20 jobs of about 240 KB each: 4.8 MB, more than one page holds.
  const std::string arg(60'000, 'a');
  const json command = {"x", arg, arg, arg, arg};
  std::set<std::string> submitted;
  for (int i = 0; i < 20; ++i) submitted.insert(h.submit({{"command", command}})["id"].get<std::string>());
  auto first = Harness::body(h.get("/v1/jobs?limit=1000"));
  ASSERT_TRUE(first.contains("next")) << "a 5 MiB listing came back in one page";
  EXPECT_LT(first["jobs"].size(), 20u);
  EXPECT_GE(first["jobs"].size(), 10u);
  std::set<std::string> seen;
  json page = first;
  for (int pages = 0; pages < 20; ++pages) {
    for (const auto& j : page["jobs"]) seen.insert(j["id"].get<std::string>());
    if (!page.contains("next")) break;
    page = Harness::body(h.get("/v1/jobs?limit=1000&after=" + page["next"].get<std::string>()));
  }
  EXPECT_EQ(seen, submitted);
}

}  // namespace
}  // namespace tessel::scheduler::testing
