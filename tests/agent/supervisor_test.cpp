// Runs the real supervisor (`tessel-agent supervise`) through DetachedLauncher.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/launcher.hpp"
#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/state_dir.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace std::chrono_literals;

namespace {

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.init().ok()); }
  void TearDown() override { std::filesystem::remove_all(root); }

  // Writes a one-rank plan for `argv` and starts its supervisor.
  std::string start(const std::string& id, std::vector<std::string> argv, int64_t limit = 0, int64_t grace = 1,
                    int ranks = 1) {
    auto a = agent_test::gaudi_assignment({0}, {0});
    a.id = id;
    EXPECT_TRUE(dir.record_started(a).ok());
    LaunchPlan p{id, dir.task_dir(id), {}, limit, grace, std::nullopt, std::nullopt, ""};
    for (int i = 0; i < ranks; ++i)
      p.ranks.push_back(
          RankLaunch{argv, {{"PATH", "/usr/bin:/bin"}, {"R", std::to_string(i)}}, dir.log_path(id, i), 0});
    EXPECT_TRUE(dir.write_launch(p).ok());
    auto pid = launcher.launch(dir.task_dir(id));
    EXPECT_TRUE(pid.ok());
    return dir.task_dir(id);
  }
  std::optional<TaskResult> wait_result(const std::string& id, std::chrono::milliseconds t = 10s) {
    std::optional<TaskResult> res;
    agent_test::poll_until(
        [&] {
          auto s = dir.load(id);
          if (s.ok() && s->result) res = s->result;
          return res.has_value();
        },
        t);
    return res;
  }
  std::string log(const std::string& id, int rank = 0) {
    auto t = read_small_file(dir.log_path(id, rank));
    return t ? *t : "";
  }

  std::string root = agent_test::make_temp_dir();
  StateDir dir{root};
  DetachedLauncher launcher{TESSEL_AGENT_BIN};
};

TEST_F(SupervisorTest, RecordsExitCodeAppendsLogsAndUsesWorkdirAndEnv) {
  start("a.0.0", {"sh", "-c", "echo out $R; echo err >&2; pwd; exit 3"});
  auto r = wait_result("a.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::exited);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->signal);
  std::string l = log("a.0.0");
  EXPECT_NE(l.find("out 0"), std::string::npos) << l;
  EXPECT_NE(l.find("err"), std::string::npos) << l;
  EXPECT_NE(l.find(dir.task_dir("a.0.0")), std::string::npos) << l;
  auto s = dir.load("a.0.0");
  ASSERT_TRUE(s->supervisor);
}

TEST_F(SupervisorTest, SupervisorIsDetachedFromUs) {
  start("d.0.0", {"sleep", "1000"});
  std::optional<SupervisorRecord> sup;
  ASSERT_TRUE(agent_test::poll_until(
      [&] {
        auto s = dir.load("d.0.0");
        if (s.ok()) sup = s->supervisor;
        return sup.has_value();
      },
      10s));
  EXPECT_NE(::getsid(sup->pid), ::getsid(0));
  ASSERT_TRUE(launcher.stop(*sup).ok());
  ASSERT_TRUE(wait_result("d.0.0"));
}

TEST_F(SupervisorTest, StopKillsTheWholeTree) {
  start("k.0.0", {"sh", "-c", "sleep 1000 & echo $! > child.pid; wait"}, 0, 1);
  const std::string pidfile = dir.task_dir("k.0.0") + "/child.pid";
  ASSERT_TRUE(agent_test::poll_until(
      [&] {
        auto t = read_small_file(pidfile);
        return t.ok() && !t->empty() && t->back() == '\n';
      },
      10s));
  int child = std::stoi(*read_small_file(pidfile));
  ASSERT_TRUE(process_start_time(child).has_value());
  auto sup = dir.load("k.0.0")->supervisor;
  ASSERT_TRUE(sup);
  ASSERT_TRUE(launcher.stop(*sup).ok());
  auto r = wait_result("k.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_NE(r->message.find("stopped"), std::string::npos);
  EXPECT_TRUE(agent_test::poll_until([&] { return !process_start_time(child).has_value(); }, 5s));
  EXPECT_TRUE(agent_test::poll_until([&] { return !process_start_time(sup->pid).has_value(); }, 5s));
}

TEST_F(SupervisorTest, TimeLimitTermsThenKills) {
  // The job ignores SIGTERM: SIGKILL follows after the grace period.
  start("t.0.0", {"sh", "-c", "trap '' TERM; sleep 1000 & wait; sleep 1000"}, 1, 1);
  auto r = wait_result("t.0.0", 15s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_NE(r->message.find("time limit"), std::string::npos) << r->message;
}

TEST_F(SupervisorTest, MissingProgramFailsToStart) {
  start("m.0.0", {"no-such-program-tessel"});
  auto r = wait_result("m.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::failed_to_start);
  EXPECT_NE(r->message.find("not found"), std::string::npos) << r->message;
  start("m2.0.0", {"/no/such/program"});
  r = wait_result("m2.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::failed_to_start);
}

TEST_F(SupervisorTest, FailedRankStopsTheOthers) {
  start("r.0.0", {"sh", "-c", "if [ $R = 1 ]; then exit 7; fi; sleep 1000"}, 0, 1, 3);
  auto r = wait_result("r.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 7);
}

TEST_F(SupervisorTest, CorruptLaunchPlanIsAClearFailure) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  ASSERT_TRUE(write_file_durable(dir.task_dir(a.id) + "/launch.json", "{oops").ok());
  ASSERT_TRUE(launcher.launch(dir.task_dir(a.id)).ok());
  auto r = wait_result(a.id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::failed_to_start);
  EXPECT_NE(r->message.find("launch.json"), std::string::npos) << r->message;
}

}  // namespace
