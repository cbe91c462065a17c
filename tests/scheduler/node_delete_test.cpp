// DELETE /v1/nodes/{name}: admins forget a node that holds no cards; the deletion
// is stored, and a node still running an agent can register again.
#include "harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

httplib::Result del(Harness& h, const std::string& path, const std::string& token) {
  return h.client->Delete(path.c_str(), h.auth(token));
}

std::string error_code(const httplib::Result& r) { return Harness::body(r)["error"]["code"]; }

TEST(NodeDelete, AdminsOnlyAndOnlyANodeWithoutCardsHeld) {
  auto t = parse_tokens("admintok admin root\nalicetok user alice\nn1tok agent n1\nn2tok agent n2\n");
  ASSERT_TRUE(t.ok());
  Harness h(*t);
  h.register_node("n1", json::array(), "n1tok");
  h.register_node("n2", json::array(), "n2tok");
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}}, "alicetok")["id"];
  ASSERT_TRUE(eventually([&] { return h.body(h.get("/v1/jobs/" + id, "alicetok"))["state"] == "assigned"; }));
  const std::string busy = h.body(h.get("/v1/jobs/" + id, "alicetok"))["allocations"][0]["node"];
  const std::string idle = busy == "n1" ? "n2" : "n1";

  EXPECT_EQ(del(h, "/v1/nodes/" + idle, "alicetok")->status, 403);
  EXPECT_EQ(del(h, "/v1/nodes/" + idle, "n1tok")->status, 403);
  EXPECT_EQ(del(h, "/v1/nodes/" + idle, "")->status, 401);
  auto missing = del(h, "/v1/nodes/nope", "admintok");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(error_code(missing), "not_found");

  auto held = del(h, "/v1/nodes/" + busy, "admintok");
  ASSERT_EQ(held->status, 409) << held->body;
  EXPECT_EQ(error_code(held), "conflict");
  EXPECT_NE(held->body.find(id), std::string::npos) << held->body;
  EXPECT_EQ(h.get("/v1/nodes/" + busy, "admintok")->status, 200);

  auto gone = del(h, "/v1/nodes/" + idle, "admintok");
  ASSERT_EQ(gone->status, 200) << gone->body;
  EXPECT_EQ(h.body(gone)["name"], idle);
  EXPECT_EQ(h.get("/v1/nodes/" + idle, "admintok")->status, 404);
  EXPECT_EQ(h.body(h.get("/v1/nodes", "admintok"))["nodes"].size(), 1U);
  EXPECT_EQ(h.body(h.get("/v1/inventory", "admintok"))["models"][0]["cards"], 8);
  // Its agent hears 404 and registers again, with its own token.
  EXPECT_EQ(h.heartbeat(idle, json::array(), idle + "tok")->status, 404);
  h.register_node(idle, json::array(), idle + "tok");
  EXPECT_EQ(h.get("/v1/nodes/" + idle, "admintok")->status, 200);
}

TEST(NodeDelete, AParkedLongPollIsAnsweredAndNothingIsPlacedOnTheDeletedNode) {
  Harness h;
  h.register_node("n1");
  const int64_t version = h.desired("n1", 0, 0)["version"];
  auto poll = h.park_poll("n1", version);
  ASSERT_TRUE(eventually([&] { return h.service->state().stats().long_polls_waiting == 1; }));
  ASSERT_EQ(h.client->Delete("/v1/nodes/n1")->status, 200);
  auto answer = poll.get();
  EXPECT_TRUE(answer["assignments"].empty()) << answer.dump();
  const std::string id = h.submit({{"command", {"x"}}})["id"];
  // Until the first pass the job may have no reason at all (the field is left out).
  ASSERT_TRUE(eventually([&] { return !h.body(h.get("/v1/jobs/" + id)).value("reason", std::string()).empty(); }));
  EXPECT_EQ(h.job_state(id), "pending");
}

TEST(NodeDelete, TheDeletionIsStored) {
  const testkit::TempDir dir("tessel-node-delete");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  const ServiceOptions opts = test_service_options();
  for (int run = 0; run < 2; ++run) {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    httplib::Client c("127.0.0.1", svc.port());
    if (run == 0) {
      const json reg = {{"node", "n1"}, {"address", "h1"}, {"agent_port", 7451}, {"inventory", gaudi_inventory()}};
      ASSERT_EQ(c.Post("/v1/agent/register", reg.dump(), "application/json")->status, 200);
      ASSERT_EQ(c.Delete("/v1/nodes/n1")->status, 200);
    } else {
      EXPECT_EQ(c.Get("/v1/nodes/n1")->status, 404);
    }
  }
}

}  // namespace
}  // namespace tessel::scheduler::testing
