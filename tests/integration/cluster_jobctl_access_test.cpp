// Job control (issue 31) with the real binaries, the cases a tenant meets: a warning
// signal at preemption, ahead of the stop; a signal sent while the node's agent is
// down, delivered once it is back; and the refusals of a scheduler with tokens (another
// user's job, raising one's own priority, releasing an admin's hold, no token at all).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

json eight_cards(const std::string& script) { return {{"command", {"/bin/sh", "-c", script}}, {"devices", 8}}; }

// Milliseconds since the epoch, as the job's shell writes them to `file`.
std::string stamp(const std::string& file) { return "echo $(($(date +%s%N) / 1000000)) > " + file; }

int64_t read_ms(const std::string& file) { return std::stoll(tessel::testkit::read_file(file)); }

// A preemptible batch job with a warning signal (USR1, 2 s ahead) is preempted by a job
// within its project's guarantee: USR1 first, SIGTERM about 2 s later, and then it is
// requeued; its next run (TESSEL_PREEMPTED=1) succeeds.
TEST(ClusterJobControlAccess, AWarningSignalAtPreemptionComesBeforeTheStop) {
  Cluster c;
  c.scheduler_args = {"--preempt-min-runtime", "1"};
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  ASSERT_EQ(c.post("/v1/projects", {{"name", "vision"}, {"quotas", {{"*", {{"guaranteed", 8}}}}}}), 201);
  ASSERT_EQ(c.post("/v1/projects", {{"name", "batch"}}), 201);
  const std::string dir = c.root() + "/out";
  std::filesystem::create_directories(dir);
  json batch =
      eight_cards("if [ -n \"$TESSEL_PREEMPTED\" ]; then exit 0; fi; trap '" + stamp(dir + "/usr1") + "' USR1; trap '" +
                  stamp(dir + "/term") + "; exit 0' TERM; touch " + dir + "/trapping; while :; do sleep 0.05; done");
  batch["project"] = "batch";
  batch["preemptible"] = true;
  batch["kill_grace_s"] = 2;
  batch["time_limit_s"] = 3600;
  batch["signal"] = {{"name", "USR1"}, {"before_s", 2}};
  const std::string b = c.submit(batch)["id"];
  ASSERT_TRUE(c.wait_job(b, {"running"}));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir + "/trapping"); }, 20s));

  json vision = eight_cards("true");
  vision["project"] = "vision";
  const std::string a = c.submit(vision)["id"];
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir + "/term"); }, 30s));
  ASSERT_TRUE(std::filesystem::exists(dir + "/usr1")) << "SIGTERM came without the warning";
  const int64_t lead = read_ms(dir + "/term") - read_ms(dir + "/usr1");
  EXPECT_GE(lead, 2000 - 300) << "stopped before the warning's 2 s";
  EXPECT_LE(lead, 2000 + 3000);
  auto done_a = c.wait_job(a, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done_a);
  EXPECT_EQ((*done_a)["state"], "succeeded");
  auto done_b = c.wait_job(b, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done_b);
  EXPECT_EQ((*done_b)["state"], "succeeded") << done_b->dump();
  EXPECT_EQ((*done_b)["preemptions"], 1);
  bool warned = false;
  const json events = c.get("/v1/jobs/" + b + "/events")["events"];
  for (const auto& e : events)
    warned |= e["event"] == "signalled" &&
              e.value("reason", "") == "SIGUSR1 to every rank: preempted by " + a + ", stopped in 2s";
  EXPECT_TRUE(warned) << events.dump();
}

// The agent is killed (its task runs on under its supervisor), the job is signalled,
// and the agent comes back: it delivers the signal it missed, and the job ends on it.
TEST(ClusterJobControlAccess, ASignalSentWhileTheAgentIsDownIsDeliveredWhenItReturns) {
  Cluster c;
  c.heartbeat_timeout_s = 60;  // The node must not be declared down meanwhile.
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  const std::string id =
      c.submit(eight_cards("trap 'exit 0' USR1; touch trapping; while :; do sleep 0.05; done"))["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(c.work_dir("n1", id) + "/trapping"); }, 20s));
  c.kill_agent("n1");
  ASSERT_EQ(c.post("/v1/jobs/" + id + "/signal", {{"name", "USR1"}}), 200);
  c.start_agent("n1");
  auto done = c.wait_job(id, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
}

const std::string kAdmin = "admin-token-0123456789";
const std::string kAlice = "alice-token-0123456789";
const std::string kBob = "bob-token-0123456789ab";

// A scheduler with tokens for an admin, alice and bob, and n1's agent on a node token.
void start_with_tokens(Cluster& c) {
  const std::string tokens = c.root() + "/tokens";
  tessel::testkit::write_file(tokens, kAdmin + " admin root\n" + kAlice + " user alice\n" + kBob + " user bob\n");
  ASSERT_EQ(::chmod(tokens.c_str(), 0600), 0);
  c.scheduler_args = {"--tokens", tokens};
  c.api_token = kAdmin;
  c.start_scheduler();
  auto r = c.rest().post("/v1/nodes/n1/token");
  ASSERT_EQ(r.status, 201) << r.text;
  const std::string token_file = c.root() + "/n1.token";
  tessel::testkit::write_file(token_file, r.body.value("token", "") + "\n");
  ASSERT_EQ(::chmod(token_file.c_str(), 0600), 0);
  c.agent_args = {"--token-file", token_file};
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
}

tessel::testkit::RestClient as(const Cluster& c, const std::string& token) {
  tessel::testkit::RestClient r = c.rest();
  r.set_token(token);
  return r;
}

// 403 with a JSON error that says why.
void expect_forbidden(const tessel::testkit::RestClient::Reply& r, const std::string& needle) {
  EXPECT_EQ(r.status, 403) << r.text;
  ASSERT_TRUE(r.body.is_object()) << r.text;
  EXPECT_NE(r.body["error"].value("message", "").find(needle), std::string::npos) << r.text;
}

TEST(ClusterJobControlAccess, OnlyTheOwnerOrAnAdminControlsAJob) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(start_with_tokens(c));
  const auto alice = as(c, kAlice), bob = as(c, kBob), admin = as(c, kAdmin), nobody = as(c, "");
  auto busy = alice.post("/v1/jobs", eight_cards("trap 'exit 0' USR1; touch trapping; while :; do sleep 0.05; done"));
  ASSERT_EQ(busy.status, 201) << busy.text;
  const std::string running = busy.body["id"];
  ASSERT_TRUE(c.wait_job(running, {"running"}));
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(c.work_dir("n1", running) + "/trapping"); }, 20s));
  auto queued = alice.post("/v1/jobs", eight_cards("true"));
  ASSERT_EQ(queued.status, 201) << queued.text;
  const std::string pending = queued.body["id"];

  // Bob may do nothing to alice's jobs (and is not told whose they are); nobody
  // without a token may do anything.
  expect_forbidden(bob.post("/v1/jobs/" + pending + "/hold", json::object()), "another user");
  expect_forbidden(bob.patch("/v1/jobs/" + pending, {{"priority", -5}}), "another user");
  expect_forbidden(bob.post("/v1/jobs/" + running + "/signal", {{"name", "USR1"}}), "another user");
  expect_forbidden(bob.post("/v1/jobs/" + running + "/requeue", json::object()), "another user");
  EXPECT_EQ(nobody.post("/v1/jobs/" + pending + "/hold", json::object()).status, 401);
  EXPECT_EQ(nobody.post("/v1/jobs/" + running + "/signal", {{"name", "USR1"}}).status, 401);

  // Alice may lower her job's priority, not raise it; an admin may.
  EXPECT_EQ(alice.patch("/v1/jobs/" + pending, {{"priority", -5}}).status, 200);
  expect_forbidden(alice.patch("/v1/jobs/" + pending, {{"priority", 50}}), "only an admin may raise");
  EXPECT_EQ(admin.patch("/v1/jobs/" + pending, {{"priority", 50}}).status, 200);

  // An admin's hold is the admin's to release.
  EXPECT_EQ(admin.post("/v1/jobs/" + pending + "/hold", json::object()).status, 200);
  expect_forbidden(alice.post("/v1/jobs/" + pending + "/release", json::object()), "root");
  EXPECT_EQ(c.get("/v1/jobs/" + pending).value("reason", ""), "held by root");
  EXPECT_EQ(admin.post("/v1/jobs/" + pending + "/release", json::object()).status, 200);

  // Nothing the refusals touched changed: the running job still runs, alice's own signal ends it.
  EXPECT_EQ(c.get("/v1/jobs/" + running)["state"], "running");
  EXPECT_EQ(alice.post("/v1/jobs/" + running + "/signal", {{"name", "USR1"}}).status, 200);
  auto done = c.wait_job(running, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  ASSERT_TRUE(c.wait_job(pending, {"succeeded"}, 30s));
}

}  // namespace
