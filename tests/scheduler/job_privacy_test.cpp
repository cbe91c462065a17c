// A job's command, env, workdir and logs are its owner's and the admins'; other
// users see that it exists, its state and its cards.
#include "harness.hpp"
#include "tessel/scheduler/auth.hpp"

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

// A failure message quotes what the job ran ("chdir /home/alice/x: ..."): its reason
// and events, as another user reads them, carry none of the workdir, argv or env.
TEST(JobPrivacy, OthersSeeAFailedJobsReasonAndEventsWithoutItsSecrets) {
  Harness h(tokens());
  json spec = secret_spec();
  spec["devices"] = 1;
  const std::string id = h.submit(spec, "alicetok")["id"];
  h.register_node("n1", json::array(), "admintok");
  ASSERT_TRUE(eventually([&] { return Harness::body(h.get("/v1/jobs/" + id, "admintok"))["state"] == "assigned"; }));
  const json desired = Harness::body(h.get("/v1/agent/nodes/n1/assignments?version=0&wait_s=0", "admintok"));
  ASSERT_EQ(desired["assignments"].size(), 1U) << desired.dump();
  json failed = report(desired["assignments"][0]["id"], "failed_to_start");
  failed["message"] = "chdir /home/alice/x: No such file or directory (train --key hunter2)";
  ASSERT_EQ(h.post("/v1/agent/report", {{"node", "n1"}, {"tasks", {failed}}}, "admintok")->status, 200);
  ASSERT_TRUE(eventually([&] { return Harness::body(h.get("/v1/jobs/" + id, "admintok"))["state"] == "failed"; }));

  const json mine = Harness::body(h.get("/v1/jobs/" + id, "alicetok"));
  EXPECT_NE(mine["reason"].get<std::string>().find("/home/alice/x"), std::string::npos) << mine.dump();
  for (const std::string& path :
       std::vector<std::string>{"/v1/jobs/" + id, "/v1/jobs/" + id + "/events", "/v1/jobs?state=failed"}) {
    const std::string seen = h.get(path, "bobtok")->body;
    EXPECT_EQ(seen.find("/home/alice/x"), std::string::npos) << path << ": " << seen;
    EXPECT_EQ(seen.find("hunter2"), std::string::npos) << path << ": " << seen;
    EXPECT_NE(seen.find("chdir <private>: No such file"), std::string::npos) << path << ": " << seen;
  }
  const std::string events = h.get("/v1/jobs/" + id + "/events", "alicetok")->body;
  EXPECT_NE(events.find("/home/alice/x"), std::string::npos) << events;
}

TEST(JobPrivacy, SecretsAreCutOutOfTextLongestFirstAndShortValuesStay) {
  api::JobSpec spec;
  spec.workdir = "/data/run";
  spec.command = {"python", "/data/run/train.py", "-v"};
  spec.env = {{"TOKEN", "s3cr3t"}, {"N", "1"}};
  EXPECT_EQ(without_job_secrets("exec /data/run/train.py: -v N=1 s3cr3t s3cr3t in /data/run", spec),
            "exec <private>: -v N=1 <private> <private> in <private>");
  EXPECT_EQ(without_job_secrets("", spec), "");
  EXPECT_EQ(without_job_secrets("nothing here", api::JobSpec{}), "nothing here");
}

}  // namespace
}  // namespace tessel::scheduler::testing
