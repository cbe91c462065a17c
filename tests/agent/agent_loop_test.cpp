// The agent's loops against an in-process fake scheduler, fake inventory and fake
// launcher: registration, READY, 404 re-registration, backoff, launch, fencing, acks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <thread>

#include "tessel/agent/agent.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace std::chrono_literals;

namespace {

struct FakeScheduler {
  std::mutex mu;
  std::condition_variable cv;
  bool reachable = true;
  bool knows_node = false;
  int registers = 0, heartbeats = 0;
  std::vector<api::TaskReport> last_reports;
  std::vector<std::string> ack_next;
  api::DesiredState desired;

  void set_desired(std::vector<api::Assignment> as) {
    std::lock_guard l(mu);
    desired.assignments = std::move(as);
    ++desired.version;
    cv.notify_all();
  }
};

class FakeApi : public SchedulerApi {
 public:
  explicit FakeApi(FakeScheduler& s) : s_(s) {}
  Reply<api::RegisterResponse> register_node(const api::RegisterRequest& req) override {
    std::lock_guard l(s_.mu);
    if (!s_.reachable) return {std::nullopt, 0, "connection refused"};
    ++s_.registers;
    s_.knows_node = true;
    s_.last_reports = req.tasks;
    return {api::RegisterResponse{1}, 200, ""};
  }
  Reply<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) override {
    std::lock_guard l(s_.mu);
    if (!s_.reachable) return {std::nullopt, 0, "connection refused"};
    if (!s_.knows_node) return {std::nullopt, 404, "unknown node"};
    ++s_.heartbeats;
    s_.last_reports = req.tasks;
    api::HeartbeatResponse r;
    for (const auto& t : req.tasks) {
      for (const auto& id : s_.ack_next)
        if (t.assignment_id == id && t.state != api::TaskState::running) r.acknowledged.push_back(id);
    }
    return {r, 200, ""};
  }
  Reply<api::DesiredState> desired_state(const std::string&, int64_t version, int wait_s) override {
    std::unique_lock l(s_.mu);
    s_.cv.wait_for(l, std::chrono::seconds(wait_s),
                   [&] { return cancelled_ || !s_.reachable || s_.desired.version != version; });
    if (cancelled_ || !s_.reachable) return {std::nullopt, 0, "connection refused"};
    return {s_.desired, 200, ""};
  }
  void cancel() override {
    std::lock_guard l(s_.mu);
    cancelled_ = true;
    s_.cv.notify_all();
  }

 private:
  FakeScheduler& s_;
  bool cancelled_ = false;
};

struct FakeInventory : InventorySource {
  Result<api::NodeInventory> read() override { return api::NodeInventory{}; }
};

// Pretends to start supervisors; stop() "ends" the task by writing its result.
struct FakeLauncher : TaskLauncher {
  explicit FakeLauncher(const StateDir& d) : dir(d) {}
  Result<int> launch(const std::string& task_dir) override {
    std::lock_guard l(mu);
    launched.push_back(std::filesystem::path(task_dir).filename().string());
    return static_cast<int>(::getpid());
  }
  Status stop(const SupervisorRecord&) override { return ok_status(); }
  const StateDir& dir;
  std::mutex mu;
  std::vector<std::string> launched;
};

struct RecordingNotifier : Notifier {
  void ready() override { ++readies; }
  void watchdog() override {}
  void status(const std::string& s) override {
    std::lock_guard l(mu);
    last_status = s;
  }
  std::optional<std::chrono::microseconds> watchdog_period() override { return std::nullopt; }
  std::atomic<int> readies{0};
  std::mutex mu;
  std::string last_status;
};

class AgentLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.init().ok()); }
  void TearDown() override {
    stop();
    std::filesystem::remove_all(root);
  }
  void start() {
    TaskManagerConfig tcfg;
    tcfg.node = "n1";
    tcfg.now_unix_ms = [] { return int64_t{1000}; };
    tcfg.reserve_port = [] { return Result<int>(4000); };
    tasks = std::make_unique<TaskManager>(dir, launcher, tcfg);
    tasks->load();
    AgentConfig cfg;
    cfg.node = "n1";
    cfg.scheduler_url = "fake";
    cfg.heartbeat_interval = 20ms;
    cfg.long_poll_wait_s = 1;
    cfg.backoff_base = 5ms;
    cfg.backoff_cap = 50ms;
    agent = std::make_unique<Agent>(cfg, hb, poll, inventory, *tasks, notifier);
    thread = std::thread([this] { agent->run(); });
  }
  void stop() {
    if (!agent) return;
    agent->stop();
    thread.join();
    agent.reset();
  }
  template <class F>
  bool until(F f) {
    return agent_test::poll_until(
        [&] {
          std::lock_guard l(sched.mu);
          return f();
        },
        10s);
  }

  std::string root = agent_test::make_temp_dir();
  StateDir dir{root};
  FakeScheduler sched;
  FakeApi hb{sched}, poll{sched};
  FakeInventory inventory;
  FakeLauncher launcher{dir};
  RecordingNotifier notifier;
  std::unique_ptr<TaskManager> tasks;
  std::unique_ptr<Agent> agent;
  std::thread thread;
};

TEST_F(AgentLoopTest, RegistersSignalsReadyAndLaunchesAssignments) {
  start();
  ASSERT_TRUE(until([&] { return sched.heartbeats > 0; }));
  EXPECT_EQ(notifier.readies, 1);
  auto a = agent_test::gaudi_assignment({0}, {3});
  sched.set_desired({a});
  ASSERT_TRUE(agent_test::poll_until(
      [&] {
        std::lock_guard l(launcher.mu);
        return launcher.launched.size() == 1;
      },
      10s));
  EXPECT_TRUE(std::filesystem::exists(dir.task_dir(a.id) + "/launch.json"));
  ASSERT_TRUE(until([&] {
    return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::running &&
           sched.last_reports[0].port == 4000;
  }));
  {
    std::lock_guard l(notifier.mu);
    EXPECT_NE(notifier.last_status.find("registered with fake, 1 tasks running"), std::string::npos)
        << notifier.last_status;
  }
  // Same desired state again (new version): not launched twice.
  sched.set_desired({a});
  stop();
  EXPECT_EQ(launcher.launched.size(), 1u);
}

TEST_F(AgentLoopTest, ReRegistersWhenTheSchedulerForgetsTheNode) {
  start();
  ASSERT_TRUE(until([&] { return sched.heartbeats > 0; }));
  {
    std::lock_guard l(sched.mu);
    sched.knows_node = false;
  }
  ASSERT_TRUE(until([&] { return sched.registers == 2 && sched.heartbeats > 1; }));
  EXPECT_EQ(notifier.readies, 1);
}

TEST_F(AgentLoopTest, BacksOffWhileUnreachableAndKeepsResultsUntilAcknowledged) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  ASSERT_TRUE(dir.write_result(a.id, TaskResult{api::TaskState::exited, 2, std::nullopt, ""}).ok());
  {
    std::lock_guard l(sched.mu);
    sched.reachable = false;
  }
  start();
  EXPECT_EQ(notifier.readies, 0);
  {
    std::lock_guard l(sched.mu);
    sched.reachable = true;
    sched.ack_next = {a.id};
  }
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  EXPECT_EQ(sched.last_reports.size(), 1u);
  ASSERT_TRUE(until([&] { return sched.heartbeats > 2 && sched.last_reports.empty(); }))
      << sched.heartbeats << " heartbeats, " << sched.last_reports.size() << " reports "
      << api::to_json(sched.last_reports[0]).dump();
  EXPECT_TRUE(std::filesystem::exists(dir.task_dir(a.id) + "/acknowledged"));
}

TEST_F(AgentLoopTest, AfterRestartKnownAssignmentsAreNotRelaunched) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  sched.desired.assignments = {a};
  sched.desired.version = 5;
  start();
  ASSERT_TRUE(until([&] { return sched.heartbeats > 2; }));
  stop();
  EXPECT_TRUE(launcher.launched.empty());
}

}  // namespace
