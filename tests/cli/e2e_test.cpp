// The real `tessel` against the real `tessel-scheduler` (loopback, port 0, temp DB,
// no agents): submit, jobs, show, cancel, wait, inventory, nodes, drain; projects
// with a tokens file's projects column, across a restart.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "binaries.hpp"
#include "files.hpp"
#include "run_tessel.hpp"

namespace tessel::cli::testing {
namespace {

using nlohmann::json;

// tessel-scheduler on 127.0.0.1:0 with its DB and log in `dir`; SIGTERM on destruction.
class Scheduler {
 public:
  explicit Scheduler(const TempDir& dir, std::vector<std::string> args = {}) {
    testkit::SchedulerOptions o;
    o.args = std::move(args);
    o.bin = TESSEL_SCHEDULER_BINARY;
    o.db = dir.str("state.db");
    o.stdout_path = dir.str("scheduler.out");
    o.stderr_path = dir.str("scheduler.log");
    child_ = testkit::start_scheduler(o);
    if (const int port = child_.wait_listening(); port > 0) url_ = "http://127.0.0.1:" + std::to_string(port);
  }
  ~Scheduler() { child_.terminate(); }
  [[nodiscard]] const std::string& url() const { return url_; }

 private:
  testkit::Child child_;
  std::string url_;
};

TEST(CliEndToEnd, AgainstRealScheduler) {
  TempDir dir;
  Scheduler sched(dir);
  ASSERT_FALSE(sched.url().empty()) << "tessel-scheduler did not print its address; see its log";
  std::map<std::string, std::string> env{{"TESSEL_SERVER", sched.url()}};

  auto r = run_tessel({"inventory"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nodes: 0 ready, 0 draining, 0 down"), std::string::npos) << r.out;
  r = run_tessel({"inventory", "-o", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out).contains("models"));

  r = run_tessel({"nodes"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "No nodes.\n");
  r = run_tessel({"nodes", "-o", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["nodes"], json::array());

  r = run_tessel({"submit", "--devices", "2", "--name", "e2e", "--time-limit", "10m", "--env", "A=1", "--", "/bin/echo",
                  "hello world"},
                 env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(r.out, id + "\n");

  r = run_tessel({"jobs"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("ID", 0), 0u);
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pending"), std::string::npos) << r.out;

  r = run_tessel({"show", id, "-o", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto job = json::parse(r.out);
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["name"], "e2e");
  EXPECT_EQ(job["spec"]["command"], json({"/bin/echo", "hello world"}));
  EXPECT_EQ(job["spec"]["time_limit_s"], 600);
  r = run_tessel({"show", id}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Command: /bin/echo 'hello world'\n"), std::string::npos) << r.out;

  r = run_tessel({"cancel", id}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(id + ": ", 0), 0u) << r.out;

  // A pending job is cancelled at once (no agent has to stop it).
  r = run_tessel({"wait", id, "--timeout", "30s"}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(id + ": cancelled"), std::string::npos) << r.err;
  // Its state history, as the scheduler stored it.
  r = run_tessel({"show", id}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("History:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" submitted "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" cancelled "), std::string::npos) << r.out;

  r = run_tessel({"jobs"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(id), std::string::npos) << r.out;
  r = run_tessel({"jobs", "--all", "-o", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto all = json::parse(r.out)["jobs"];
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["state"], "cancelled");

  r = run_tessel({"submit", "--devices", "33", "--", "/bin/true"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: submit: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("devices"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = run_tessel({"drain", "no-such-node"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: drain: no-such-node: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliEndToEnd, ProjectsMembershipAndRestart) {
  TempDir dir;
  const std::string tokens = dir.str("tokens");
  testkit::write_file(tokens,
                      "admin-token-0123456789 admin root\n"
                      "alice-token-0123456789 user alice vision\n");
  ASSERT_EQ(::chmod(tokens.c_str(), 0600), 0);
  std::map<std::string, std::string> admin, alice;
  {
    Scheduler sched(dir, {"--tokens", tokens, "--fairshare-half-life", "12h"});
    ASSERT_FALSE(sched.url().empty()) << "tessel-scheduler did not start; see its log";
    admin = {{"TESSEL_SERVER", sched.url()}, {"TESSEL_TOKEN", "admin-token-0123456789"}};
    alice = {{"TESSEL_SERVER", sched.url()}, {"TESSEL_TOKEN", "alice-token-0123456789"}};

    auto r = run_tessel({"project", "create", "vision", "--quota", "HL-225=16"}, alice);
    EXPECT_EQ(r.exit_code, 1);  // Admins only.
    r = run_tessel({"project", "create", "vision", "--shares", "2", "--quota", "HL-225=4:16"}, admin);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tessel({"project", "create", "nlp"}, admin);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tessel({"project", "create", "bad", "--quota", "HL-225=9:8"}, admin);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("quotas.HL-225.guaranteed"), std::string::npos) << r.err;

    r = run_tessel({"submit", "--devices", "1", "--", "/bin/true"}, alice);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string id = r.out.substr(0, r.out.find('\n'));
    r = run_tessel({"show", id, "-o", "json"}, alice);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["spec"]["project"], "vision");
    r = run_tessel({"submit", "--project", "nlp", "--devices", "1", "--", "/bin/true"}, alice);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("not a member of project nlp"), std::string::npos) << r.err;
    r = run_tessel({"submit", "--project", "nope", "--devices", "1", "--", "/bin/true"}, alice);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("unknown project nope"), std::string::npos) << r.err;
  }
  Scheduler again(dir, {"--tokens", tokens});
  ASSERT_FALSE(again.url().empty());
  admin["TESSEL_SERVER"] = again.url();
  auto r = run_tessel({"project", "show", "vision"}, admin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Shares:      2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HL-225 4/16"), std::string::npos) << r.out;
  r = run_tessel({"project", "list"}, admin);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nlp"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bad"), std::string::npos) << r.out;
  r = run_tessel({"project", "delete", "vision"}, admin);
  EXPECT_EQ(r.exit_code, 1);  // Its job is still pending.
  EXPECT_NE(r.err.find("not yet ended"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessel::cli::testing
