// The real `tessel` against the real `tessel-scheduler` (loopback, port 0, temp DB,
// no agents): submit, jobs, show, cancel, wait, inventory, nodes, drain.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "binaries.hpp"
#include "run_tessel.hpp"

namespace tessel::cli::testing {
namespace {

using nlohmann::json;

// tessel-scheduler on 127.0.0.1:0 with its DB and log in `dir`; SIGTERM on destruction.
class Scheduler {
 public:
  explicit Scheduler(const TempDir& dir) {
    testkit::SchedulerOptions o;
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

  r = run_tessel({"jobs"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(id), std::string::npos) << r.out;
  r = run_tessel({"jobs", "--all", "-o", "json"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto all = json::parse(r.out)["jobs"];
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["state"], "cancelled");

  r = run_tessel({"submit", "--devices", "3", "--", "/bin/true"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: submit: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("devices"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = run_tessel({"drain", "no-such-node"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: drain: no-such-node: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace tessel::cli::testing
