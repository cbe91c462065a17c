// POST/DELETE /v1/nodes/{name}/token and GET /v1/node-tokens: admin-issued agent tokens, one per node,
// bound to it like the tokens file's agent tokens; rotation and revocation take
// effect at once; only the token's SHA-256 is stored, and it survives a restart.
#include "harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/node_tokens.hpp"

namespace tessel::scheduler::testing {
namespace {

const char* kTokens = "admintok0000000000 admin root\nalicetok0000000000 user alice\nn2tok0000000000000 agent n2\n";
const std::string kAdmin = "admintok0000000000";
const std::string kAlice = "alicetok0000000000";
const std::string kN2 = "n2tok0000000000000";

TokenTable tokens() { return tokens_from(kTokens); }

json register_body(const std::string& node, const std::string& address = "10.0.0.1") {
  return {{"node", node}, {"address", address}, {"agent_port", 7451}, {"inventory", gaudi_inventory()}};
}

httplib::Result revoke(Harness& h, const std::string& node, const std::string& token) {
  return h.client->Delete(("/v1/nodes/" + node + "/token").c_str(), h.auth(token));
}

std::string issue(Harness& h, const std::string& node) {
  auto r = h.post("/v1/nodes/" + node + "/token", json::object(), kAdmin);
  EXPECT_TRUE(r);
  if (!r) return "";
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store");
  return Harness::body(r).value("token", "");
}

TEST(NodeToken, IssuedTokenRegistersItsNodeOnlyAndIsNeverShownAgain) {
  Harness h(tokens());
  auto r = h.post("/v1/nodes/n1/token", json::object(), kAdmin);
  ASSERT_EQ(r->status, 201) << r->body;
  const json issued = Harness::body(r);
  EXPECT_EQ(issued["node"], "n1");
  EXPECT_EQ(issued["rotated"], false);
  const std::string token = issued["token"];
  EXPECT_EQ(token.size(), 64U);  // 32 random bytes in hex.
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos);

  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 200);
  EXPECT_EQ(h.heartbeat("n1", json::array(), token)->status, 200);
  EXPECT_EQ(h.get("/v1/agent/nodes/n1/assignments?version=0&wait_s=0", token)->status, 200);
  EXPECT_EQ(h.post("/v1/agent/report", {{"node", "n1"}, {"tasks", json::array()}}, token)->status, 200);
  // Bound to n1: another node's register, heartbeat, poll and report are refused.
  EXPECT_EQ(h.post("/v1/agent/register", register_body("n2"), token)->status, 403);
  h.register_node("n2", json::array(), kN2);
  EXPECT_EQ(h.heartbeat("n2", json::array(), token)->status, 403);
  EXPECT_EQ(h.get("/v1/agent/nodes/n2/assignments?version=0&wait_s=0", token)->status, 403);
  EXPECT_EQ(h.post("/v1/agent/report", {{"node", "n2"}, {"tasks", json::array()}}, token)->status, 403);
  // An agent's role only: no user or admin requests.
  EXPECT_EQ(h.get("/v1/jobs", token)->status, 403);
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), token)->status, 403);
  // Neither the node's view nor its listing shows the token.
  EXPECT_EQ(h.get("/v1/nodes/n1", kAdmin)->body.find(token), std::string::npos);
  EXPECT_EQ(h.get("/v1/nodes", kAdmin)->body.find(token), std::string::npos);
}

TEST(NodeToken, ReissuingRotatesAndRevokingRefusesAtOnce) {
  Harness h(tokens());
  const std::string first = issue(h, "n1");
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), first)->status, 200);

  auto again = h.post("/v1/nodes/n1/token", json::object(), kAdmin);
  ASSERT_EQ(again->status, 201) << again->body;
  EXPECT_EQ(Harness::body(again)["rotated"], true);
  const std::string second = Harness::body(again)["token"];
  EXPECT_NE(second, first);
  EXPECT_EQ(h.heartbeat("n1", json::array(), first)->status, 401);
  EXPECT_EQ(h.post("/v1/agent/register", register_body("n1", "10.6.6.6"), first)->status, 401);
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), second)->status, 200);
  EXPECT_EQ(h.heartbeat("n1", json::array(), second)->status, 200);

  auto revoked = revoke(h, "n1", kAdmin);
  ASSERT_EQ(revoked->status, 200) << revoked->body;
  EXPECT_EQ(Harness::body(revoked)["revoked"], true);
  EXPECT_EQ(h.heartbeat("n1", json::array(), second)->status, 401);
  EXPECT_EQ(h.get("/v1/agent/nodes/n1/assignments?version=0&wait_s=0", second)->status, 401);
  auto none = revoke(h, "n1", kAdmin);
  EXPECT_EQ(none->status, 404);
  EXPECT_EQ(Harness::body(none)["error"]["code"], "not_found");
  // The tokens file's agent tokens are untouched by all this.
  h.register_node("n2", json::array(), kN2);
}

// A poll parked before the revocation ends at once with 401 (no assignment, no env
// secrets reach the old credential), and nothing is placed on the node until its
// agent comes back with a valid token.
TEST(NodeToken, RevokingEndsParkedPollsAndStopsPlacementAtOnce) {
  Harness h(tokens());
  const std::string token = issue(h, "n1");
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 200);
  const json now = Harness::body(h.get("/v1/agent/nodes/n1/assignments?version=0&wait_s=0", token));
  auto parked = h.park_poll("n1", now["version"].get<int64_t>(), token);
  ASSERT_TRUE(eventually([&] { return h.long_polls_parked(kAdmin) == 1; }));

  ASSERT_EQ(revoke(h, "n1", kAdmin)->status, 200);
  ASSERT_EQ(parked.wait_for(std::chrono::seconds(10)), std::future_status::ready);  // Not at its 30 s.
  const json answer = parked.get();
  EXPECT_EQ(answer["error"]["code"], "unauthenticated") << answer.dump();
  EXPECT_FALSE(answer.contains("assignments")) << answer.dump();
  EXPECT_EQ(h.long_polls_parked(kAdmin), 0);

  const json node = Harness::body(h.get("/v1/nodes/n1", kAdmin));
  EXPECT_EQ(node["state"], "degraded") << node.dump();
  const std::string id = h.submit({{"command", {"true"}}, {"devices", 1}}, kAdmin)["id"];
  h.service->state().schedule_pass();
  auto state = [&] { return Harness::body(h.get("/v1/jobs/" + id, kAdmin))["state"]; };
  EXPECT_EQ(state(), "pending");

  // Back with a new token: placeable again.
  const std::string fresh = issue(h, "n1");
  ASSERT_EQ(h.heartbeat("n1", json::array(), fresh)->status, 200);
  EXPECT_TRUE(eventually([&] { return state() == "assigned"; }));
}

// Deleting a node ends its parked polls at once too; its agent registers it again.
TEST(NodeToken, DeletingANodeEndsItsParkedPolls) {
  Harness h(tokens());
  h.register_node("n2", json::array(), kN2);
  const json now = Harness::body(h.get("/v1/agent/nodes/n2/assignments?version=0&wait_s=0", kN2));
  auto parked = h.park_poll("n2", now["version"].get<int64_t>(), kN2);
  ASSERT_TRUE(eventually([&] { return h.long_polls_parked(kAdmin) == 1; }));
  ASSERT_EQ(h.client->Delete("/v1/nodes/n2", h.auth(kAdmin))->status, 200);
  ASSERT_EQ(parked.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(parked.get()["error"]["code"], "unauthenticated");
  h.register_node("n2", json::array(), kN2);
}

// As docs/operator-guide.md says: deleting a node keeps its token (an agent still running registers it
// again, as a deleted Kubernetes node's kubelet does); decommissioning revokes it too.
TEST(NodeToken, DeletingANodeKeepsItsTokenUntilRevoked) {
  Harness h(tokens());
  const std::string token = issue(h, "n1");
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 200);
  ASSERT_EQ(h.client->Delete("/v1/nodes/n1", h.auth(kAdmin))->status, 200);
  EXPECT_EQ(h.get("/v1/nodes/n1", kAdmin)->status, 404);
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 200);
  EXPECT_EQ(h.get("/v1/nodes/n1", kAdmin)->status, 200);

  ASSERT_EQ(h.client->Delete("/v1/nodes/n1", h.auth(kAdmin))->status, 200);
  ASSERT_EQ(revoke(h, "n1", kAdmin)->status, 200);
  EXPECT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 401);
  EXPECT_EQ(h.get("/v1/nodes/n1", kAdmin)->status, 404);
}

TEST(NodeToken, AdminsOnlyAndNamesAreChecked) {
  Harness h(tokens());
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), kAlice)->status, 403);
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), kN2)->status, 403);
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), "")->status, 401);
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), "guessed")->status, 401);
  const std::string token = issue(h, "n1");
  EXPECT_EQ(revoke(h, "n1", kAlice)->status, 403);
  EXPECT_EQ(revoke(h, "n1", token)->status, 403);  // Not even its own.
  EXPECT_EQ(revoke(h, "n1", "")->status, 401);
  auto bad = h.post("/v1/nodes/bad%20name/token", json::object(), kAdmin);
  ASSERT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(Harness::body(bad)["error"]["field"], "name");
}

TEST(NodeToken, ListShowsNodesAndTimesNeverTokens) {
  Harness h(tokens());
  auto empty = h.get("/v1/node-tokens", kAdmin);
  ASSERT_EQ(empty->status, 200) << empty->body;
  EXPECT_EQ(Harness::body(empty), json({{"tokens", json::array()}}));
  const std::string n3 = issue(h, "n3");
  const json n1_issued = Harness::body(h.post("/v1/nodes/n1/token", json::object(), kAdmin));
  const std::string n1 = n1_issued.value("token", "");
  auto r = h.get("/v1/node-tokens", kAdmin);
  ASSERT_EQ(r->status, 200) << r->body;
  const json listed = Harness::body(r)["tokens"];
  ASSERT_EQ(listed.size(), 2U) << r->body;
  EXPECT_EQ(listed[0]["node"], "n1");  // By name.
  EXPECT_EQ(listed[1]["node"], "n3");
  EXPECT_EQ(listed[0]["issued_at"], n1_issued["issued_at"]) << r->body;
  EXPECT_EQ(listed[0].size(), 2U) << r->body;
  for (const std::string& secret : {n1, n3, sha256_hex(n1), sha256_hex(n3)})
    EXPECT_EQ(r->body.find(secret), std::string::npos) << r->body;
  // The tokens file's agent token (n2) is not an issued one.
  EXPECT_EQ(r->body.find("\"n2\""), std::string::npos) << r->body;
  EXPECT_EQ(h.get("/v1/node-tokens", kAlice)->status, 403);
  EXPECT_EQ(h.get("/v1/node-tokens", n1)->status, 403);
  EXPECT_EQ(h.get("/v1/node-tokens", "")->status, 401);
  ASSERT_EQ(revoke(h, "n1", kAdmin)->status, 200);
  EXPECT_EQ(Harness::body(h.get("/v1/node-tokens", kAdmin))["tokens"],
            json::parse(R"([{"node": "n3", "issued_at": ")" + listed[1]["issued_at"].get<std::string>() + "\"}]"));
}

TEST(NodeToken, RefusedWithoutAuthentication) {
  Harness h;  // No tokens file: everyone is admin, so a token would guard nothing.
  auto r = h.post("/v1/nodes/n1/token", json::object());
  ASSERT_EQ(r->status, 409) << r->body;
  EXPECT_NE(r->body.find("--tokens"), std::string::npos) << r->body;
}

TEST(NodeToken, AFailedWriteKeepsTheOldToken) {
  Harness h(tokens());
  const std::string token = issue(h, "n1");
  h.store->fail_writes = true;
  EXPECT_EQ(h.post("/v1/nodes/n1/token", json::object(), kAdmin)->status, 503);
  EXPECT_EQ(revoke(h, "n1", kAdmin)->status, 503);
  h.store->fail_writes = false;
  ASSERT_EQ(h.post("/v1/agent/register", register_body("n1"), token)->status, 200);
}

TEST(NodeToken, OnlyTheHashIsStoredAndItSurvivesARestart) {
  const testkit::TempDir dir("tessel-node-token");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  std::string token, revoked_token;
  for (int run = 0; run < 2; ++run) {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, tokens(), test_service_options());
    ASSERT_TRUE(svc.start().ok());
    httplib::Client c("127.0.0.1", svc.port());
    const httplib::Headers admin = {{"Authorization", "Bearer " + kAdmin}};
    if (run == 0) {
      token = Harness::body(c.Post("/v1/nodes/n1/token", admin, "{}", "application/json"))["token"];
      revoked_token = Harness::body(c.Post("/v1/nodes/n3/token", admin, "{}", "application/json"))["token"];
      ASSERT_EQ(c.Delete("/v1/nodes/n3/token", admin)->status, 200);
      auto snap = (*store)->load();
      ASSERT_TRUE(snap.ok());
      ASSERT_EQ(snap->node_tokens.size(), 1U);
      EXPECT_EQ(snap->node_tokens[0].node, "n1");
      EXPECT_EQ(snap->node_tokens[0].sha256, sha256_hex(token));
      EXPECT_EQ(node_token_to_json(snap->node_tokens[0]).find(token), std::string::npos);
    } else {
      const httplib::Headers n1 = {{"Authorization", "Bearer " + token}};
      const httplib::Headers n3 = {{"Authorization", "Bearer " + revoked_token}};
      EXPECT_EQ(c.Post("/v1/agent/register", n1, register_body("n1").dump(), "application/json")->status, 200);
      EXPECT_EQ(c.Post("/v1/agent/register", n3, register_body("n3").dump(), "application/json")->status, 401);
    }
  }
}

TEST(NodeToken, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace tessel::scheduler::testing
