// Admin-issued node tokens with the real binaries: tessel-scheduler with a tokens file
// holding only an admin, an agent token issued through the API (POST
// /v1/nodes/{name}/token) in the real tessel-agent's --token-file. The node registers
// and runs a job; the token is listed (GET /v1/node-tokens), never shown again, and
// acts for its node only; revoked (DELETE), the agent's heartbeats are refused and the
// node goes down; a new token in the file brings it back after a restart.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <csignal>
#include <string>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kAdmin = "admin-token-0123456789";

// Issues (or rotates) `node`'s token and writes it, 0600, to `path`; "" on failure.
std::string issue_to_file(Cluster& c, const std::string& node, const std::string& path) {
  auto r = c.rest().post("/v1/nodes/" + node + "/token");  // No body, as curl -X POST sends.
  EXPECT_EQ(r.status, 201) << r.text;
  if (r.status != 201) return "";
  const std::string token = r.body.value("token", "");
  tessel::testkit::write_file(path, token + "\n");
  EXPECT_EQ(::chmod(path.c_str(), 0600), 0);
  return token;
}

TEST(ClusterNodeToken, TheRealAgentRunsOnAnIssuedTokenUntilItIsRevoked) {
  Cluster c;
  const std::string tokens = c.root() + "/tokens";
  tessel::testkit::write_file(tokens, kAdmin + " admin root\n");
  ASSERT_EQ(::chmod(tokens.c_str(), 0600), 0);
  c.scheduler_args = {"--tokens", tokens};
  c.api_token = kAdmin;
  c.start_scheduler();

  const std::string token_file = c.root() + "/n1.token";
  const std::string token = issue_to_file(c, "n1", token_file);
  ASSERT_EQ(token.size(), 64U);
  c.agent_args = {"--token-file", token_file};
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready")) << c.agent("n1").stderr_text();
  const json job = c.submit({{"command", {"/bin/true"}}, {"devices", 2}});
  ASSERT_TRUE(c.wait_job(job.value("id", ""), {"succeeded"}));

  const json listed = c.get("/v1/node-tokens");
  ASSERT_EQ(listed["tokens"].size(), 1U) << listed.dump();
  EXPECT_EQ(listed["tokens"][0]["node"], "n1");
  EXPECT_EQ(listed.dump().find(token), std::string::npos);

  // The node's token is an agent's: no user or admin requests.
  tessel::testkit::RestClient as_node = c.rest();
  as_node.set_token(token);
  EXPECT_EQ(as_node.get("/v1/node-tokens").status, 403);
  EXPECT_EQ(as_node.post("/v1/jobs", json{{"command", {"/bin/true"}}}).status, 403);
  EXPECT_EQ(as_node.post("/v1/nodes/n1/drain").status, 403);

  // Revoked: the running agent's heartbeats are refused from now on, so the node goes
  // down (--heartbeat-timeout 2 s) and a job waits.
  ASSERT_EQ(c.rest().del("/v1/nodes/n1/token").status, 200);
  EXPECT_EQ(c.get("/v1/node-tokens")["tokens"], json::array());
  ASSERT_TRUE(c.wait_node_state("n1", "down")) << c.get("/v1/nodes/n1").dump();
  EXPECT_EQ(as_node.post("/v1/agent/report", json{{"node", "n1"}, {"tasks", json::array()}}).status, 401);
  const json waiting = c.submit({{"command", {"/bin/true"}}, {"devices", 1}});
  EXPECT_EQ(waiting.value("state", ""), "pending") << waiting.dump();

  // A new token in the file: restarted on it, the agent brings the node back and the
  // waiting job runs.
  const std::string again = issue_to_file(c, "n1", token_file);
  ASSERT_EQ(again.size(), 64U);
  EXPECT_NE(again, token);
  c.kill_agent("n1", SIGTERM);
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready")) << c.agent("n1").stderr_text();
  EXPECT_TRUE(c.wait_job(waiting.value("id", ""), {"succeeded"}));
}

}  // namespace
