// A job's command, env, workdir and logs are its owner's and the admins'; other
// users see that it exists, its state and its cards.
#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

TokenTable tokens() { return tokens_from("admintok admin root\nalicetok user alice\nbobtok user bob\n"); }

json secret_spec() {
  return {{"command", {"train", "--key", "hunter2"}}, {"env", {{"API_KEY", "hunter2"}}}, {"workdir", "/home/alice/x"}};
}

void expect_hidden(const json& job) {
  EXPECT_EQ(job["private"], true) << job.dump();
  EXPECT_FALSE(job["spec"].contains("command")) << job.dump();
  EXPECT_FALSE(job["spec"].contains("env")) << job.dump();
  EXPECT_FALSE(job["spec"].contains("workdir")) << job.dump();
  EXPECT_EQ(job.dump().find("hunter2"), std::string::npos) << job.dump();
  EXPECT_EQ(job["user"], "alice");
  EXPECT_TRUE(job.contains("state"));
}

void expect_shown(const json& job) {
  EXPECT_FALSE(job.contains("private")) << job.dump();
  EXPECT_EQ(job["spec"]["env"]["API_KEY"], "hunter2") << job.dump();
  EXPECT_EQ(job["spec"]["command"][2], "hunter2");
  EXPECT_EQ(job["spec"]["workdir"], "/home/alice/x");
}

TEST(JobPrivacy, OthersSeeTheJobButNotItsCommandEnvOrWorkdir) {
  Harness h(tokens());
  const std::string id = h.submit(secret_spec(), "alicetok")["id"];
  expect_hidden(Harness::body(h.get("/v1/jobs/" + id, "bobtok")));
  expect_hidden(Harness::body(h.get("/v1/jobs", "bobtok"))["jobs"][0]);
  expect_shown(Harness::body(h.get("/v1/jobs/" + id, "alicetok")));
  expect_shown(Harness::body(h.get("/v1/jobs", "alicetok"))["jobs"][0]);
  expect_shown(Harness::body(h.get("/v1/jobs/" + id, "admintok")));
}

TEST(JobPrivacy, LogsAreTheOwnersAndTheAdmins) {
  Harness h(tokens());
  const std::string id = h.submit(secret_spec(), "alicetok")["id"];
  auto bob = h.get("/v1/jobs/" + id + "/logs", "bobtok");
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 403) << bob->body;
  EXPECT_EQ(Harness::body(bob)["error"]["code"], "permission_denied");
  // The owner and admins get past the check (the job has not started: no log yet).
  for (const char* tok : {"alicetok", "admintok"}) {
    auto r = h.get("/v1/jobs/" + id + "/logs", tok);
    ASSERT_TRUE(r);
    EXPECT_NE(r->status, 403) << tok << ": " << r->body;
  }
  EXPECT_EQ(h.get("/v1/jobs/j-99999999/logs", "bobtok")->status, 404);
}

TEST(JobPrivacy, WithoutTokensEveryoneIsAdmin) {
  Harness h;
  const std::string id = h.submit(secret_spec())["id"];
  expect_shown(Harness::body(h.get("/v1/jobs/" + id)));
}

}  // namespace
}  // namespace tessel::scheduler::testing
