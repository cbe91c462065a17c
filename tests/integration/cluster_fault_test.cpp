// Cancel, time limit, failures, agent kill -9, scheduler restart, a node going down
// and coming back, and sd_notify — against the real binaries.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cluster.hpp"
#include "files.hpp"
#include "notify_socket.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A job whose shell starts a grandchild `sleep 1000` and records its pid.
json tree_job(int devices = 1) {
  return {{"command", {"sh", "-c", "sleep 1000 & echo $! > grandchild.pid; wait"}}, {"devices", devices}};
}

pid_t wait_grandchild(Cluster& c, const std::string& node, const std::string& job) {
  std::string f = c.work_dir(node, job) + "/grandchild.pid";
  pid_t pid = 0;
  eventually(
      [&] {
        auto t = tessel::testkit::read_file(f);
        if (t.empty() || t.back() != '\n') return false;
        pid = std::stoi(t);
        return true;
      },
      20s);
  return pid;
}

class ClusterFault : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_agent("n1");
  }
  Cluster c;
};

TEST_F(ClusterFault, CancelKillsTheWholeTree) {
  auto job = c.submit(tree_job());
  std::string id = job["id"];
  pid_t gc = wait_grandchild(c, "n1", id);
  ASSERT_GT(gc, 0);
  ASSERT_TRUE(pid_alive(gc));
  EXPECT_EQ(c.post("/v1/jobs/" + id + "/cancel", json::object()) / 100, 2);
  ASSERT_TRUE(c.wait_job(id, {"cancelled"}));
  EXPECT_TRUE(eventually([&] { return !pid_alive(gc); }, 20s)) << "grandchild " << gc << " survived";
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(c.task_dir("n1", id) + "/result.json"); }, 20s));
}

TEST_F(ClusterFault, TimeLimitAndNonZeroExitFail) {
  auto slow = c.submit({{"command", {"sleep", "1000"}}, {"devices", 1}, {"time_limit_s", 1}, {"kill_grace_s", 1}});
  auto bad = c.submit({{"command", {"sh", "-c", "exit 3"}}, {"devices", 1}});
  auto b = c.wait_job(bad["id"], {"failed", "succeeded"});
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)["state"], "failed");
  EXPECT_EQ((*b).value("exit_code", 0), 3) << b->dump();
  auto s = c.wait_job(slow["id"], {"failed", "succeeded"});
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["state"], "failed");
  EXPECT_NE(tessel::testkit::read_file(c.task_dir("n1", slow["id"]) + "/result.json").find("time limit"),
            std::string::npos);
}

TEST_F(ClusterFault, AgentKill9TasksSurviveAndResultsArrive) {
  auto job =
      c.submit({{"command",
                 {"sh", "-c", "sleep 1000 & echo $! > grandchild.pid; while [ ! -e go ]; do sleep 0.05; done; exit 5"}},
                {"devices", 2}});
  std::string id = job["id"];
  pid_t gc = wait_grandchild(c, "n1", id);
  ASSERT_GT(gc, 0);
  c.kill_agent("n1", SIGKILL);
  EXPECT_TRUE(pid_alive(gc));
  // Let the task finish while the agent is down.
  { std::ofstream(c.work_dir("n1", id) + "/go") << "go\n"; }
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(c.task_dir("n1", id) + "/result.json"); }, 20s));
  c.start_agent("n1");
  auto done = c.wait_job(id, {"failed", "succeeded"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done).value("exit_code", 0), 5) << done->dump();
}

TEST_F(ClusterFault, AgentRestartReattachesRunningTask) {
  auto job = c.submit(tree_job(1));
  std::string id = job["id"];
  pid_t gc = wait_grandchild(c, "n1", id);
  ASSERT_GT(gc, 0);
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  c.kill_agent("n1", SIGKILL);
  c.start_agent("n1");
  EXPECT_TRUE(pid_alive(gc));
  EXPECT_EQ(c.post("/v1/jobs/" + id + "/cancel", json::object()) / 100, 2);
  ASSERT_TRUE(c.wait_job(id, {"cancelled"}));
  EXPECT_TRUE(eventually([&] { return !pid_alive(gc); }, 20s));
}

TEST_F(ClusterFault, SchedulerRestartKeepsRunningTasks) {
  auto job = c.submit(tree_job(1));
  std::string id = job["id"];
  pid_t gc = wait_grandchild(c, "n1", id);
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  c.stop_scheduler(SIGKILL);
  c.start_scheduler();
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  auto j = c.wait_job(id, {"running"});
  ASSERT_TRUE(j);
  EXPECT_TRUE(pid_alive(gc));
  auto later = c.submit({{"command", {"true"}}, {"devices", 1}});
  EXPECT_TRUE(c.wait_job(later["id"], {"succeeded"}));
  EXPECT_TRUE(pid_alive(gc));
}

TEST_F(ClusterFault, NodeDownAndBackStaleTaskKilledBeforeCardsReused) {
  auto job = c.submit(tree_job(8));
  std::string id = job["id"];
  pid_t gc = wait_grandchild(c, "n1", id);
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  c.kill_agent("n1", SIGSTOP);
  ASSERT_TRUE(c.wait_node_state("n1", "down"));
  auto next = c.submit({{"command", {"true"}}, {"devices", 8}});
  c.kill_agent("n1", SIGCONT);
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  EXPECT_TRUE(eventually([&] { return !pid_alive(gc); }, 20s)) << "stale task survived";
  auto n = c.wait_job(next["id"], {"succeeded"}, 30s);
  ASSERT_TRUE(n);
  // The new job's task was recorded after the stale one had ended.
  auto stale_end = std::filesystem::last_write_time(c.task_dir("n1", id) + "/result.json");
  auto new_start = std::filesystem::last_write_time(c.task_dir("n1", (*n)["id"]) + "/assignment.json");
  EXPECT_LE(stale_end, new_start);
}

TEST(ClusterNotify, SdNotifyReadyAndStatus) {
  Cluster c;
  c.start_scheduler();
  tessel::testkit::NotifySocket notify(c.root() + "/notify.sock");
  c.start_agent("n1", "gaudi2-hl225-8.csv", {{"NOTIFY_SOCKET", notify.path()}, {"WATCHDOG_USEC", "400000"}});
  EXPECT_TRUE(notify.wait_for_all({"READY=1", "WATCHDOG=1", "STATUS=registered with http://127.0.0.1:"}, 20s))
      << notify.received();
}

}  // namespace
