// The agent's loops against an in-process fake scheduler, fake inventory and fake
// launcher: registration, READY, 404 re-registration, backoff, launch, fencing, acks,
// and task reports (sent at once on a supervisor's datagram, retried, never in heartbeats).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tessel/agent/agent.hpp"
#include "tessel/base/http_status.hpp"
#include "tessel/agent/durable_file.hpp"
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
  int registers = 0, heartbeats = 0, heartbeats_with_tasks = 0, reports = 0;
  int failing_reports = 0;     // The next this many reports fail (HTTP 503).
  int failed_reports = 0;      // How many did.
  bool block_reports = false;  // A report hangs until cancelled.
  int reports_in_flight = 0;
  std::vector<api::TaskReport> last_reports;  // From the last registration or report.
  std::string last_degraded;                  // From the last registration or heartbeat.
  api::EpochRefusals last_refusals;           // From the last registration or heartbeat.
  std::vector<std::string> ack_next;          // Acknowledged once a report says they ended.
  api::DesiredState desired;

  void set_desired(std::vector<api::Assignment> as) {
    std::lock_guard l(mu);
    desired.assignments = std::move(as);
    ++desired.version;
    cv.notify_all();
  }
};

// What the real SchedulerClient answers when no answer came, and for an error status
// with the API's error envelope.
Error unreachable() { return Error::unavailable("connection refused").wrap("no answer"); }
Error http_error(int status, const std::string& message) {
  const nlohmann::json envelope = {
      {"error", {{"code", to_string(error_code_of_http_status(status))}, {"message", message}}}};
  return error_of_response(status, envelope.dump());
}

class FakeApi : public SchedulerApi {
 public:
  explicit FakeApi(FakeScheduler& s) : s_(s) {}
  Result<api::RegisterResponse> register_node(const api::RegisterRequest& req) override {
    std::lock_guard l(s_.mu);
    if (!s_.reachable) return unreachable();
    ++s_.registers;
    s_.knows_node = true;
    s_.last_reports = req.tasks;
    s_.last_degraded = req.degraded;
    s_.last_refusals = req.epoch_refusals;
    return api::RegisterResponse{1};
  }
  Result<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) override {
    std::lock_guard l(s_.mu);
    if (!s_.reachable) return unreachable();
    if (!s_.knows_node) return http_error(404, "unknown node");
    ++s_.heartbeats;
    if (req.tasks) ++s_.heartbeats_with_tasks;
    s_.last_degraded = req.degraded;
    s_.last_refusals = req.epoch_refusals;
    return api::HeartbeatResponse{};
  }
  Result<api::ReportResponse> report(const api::ReportRequest& req) override {
    std::unique_lock l(s_.mu);
    if (s_.block_reports) {
      ++s_.reports_in_flight;
      s_.cv.notify_all();
      s_.cv.wait(l, [&] { return cancelled_; });
      --s_.reports_in_flight;
    }
    if (cancelled_ || !s_.reachable) return unreachable();
    if (s_.failing_reports > 0) {
      --s_.failing_reports;
      ++s_.failed_reports;
      return http_error(503, "storage unavailable");
    }
    if (!s_.knows_node) return http_error(404, "unknown node");
    ++s_.reports;
    s_.last_reports = req.tasks;
    api::ReportResponse r;
    for (const auto& t : req.tasks)
      for (const auto& id : s_.ack_next)
        if (t.assignment_id == id && t.state != api::TaskState::running) r.acknowledged.push_back(id);
    return r;
  }
  Result<api::DesiredState> desired_state(const std::string&, int64_t version, int wait_s) override {
    std::unique_lock l(s_.mu);
    s_.cv.wait_for(l, std::chrono::seconds(wait_s),
                   [&] { return cancelled_ || !s_.reachable || s_.desired.version != version; });
    if (cancelled_ || !s_.reachable) return unreachable();
    return s_.desired;
  }
  void cancel() override {
    std::lock_guard l(s_.mu);
    cancelled_ = true;
    s_.cv.notify_all();
  }

 private:
  FakeScheduler& s_;
  bool cancelled_ = false;  // Guarded by s_.mu.
};

// A call that returns at once, or, after hang(), not before release() (at most 10 s):
// a hung vendor tool, a stalled disk. Counts calls and those in flight.
struct Gate {
  void pass() {
    std::unique_lock l(mu);
    ++calls;
    max_in_flight = std::max(max_in_flight, ++in_flight);
    cv.wait_for(l, 10s, [&] { return !hung; });
    --in_flight;
  }
  void hang() {
    std::lock_guard l(mu);
    hung = true;
  }
  void release() {
    {
      std::lock_guard l(mu);
      hung = false;
    }
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool hung = false;
  int calls = 0, in_flight = 0, max_in_flight = 0;  // Guarded by mu.
};

struct FakeInventory : InventorySource {
  Result<api::NodeInventory> read() override {
    gate.pass();
    return api::NodeInventory{};
  }
  Gate gate;
};

// Pretends to start supervisors (the "supervisor" is this test process, alive).
struct FakeLauncher : TaskLauncher {
  explicit FakeLauncher(const StateDir& d) : dir(d) {}
  Result<int> launch(const std::string& task_dir) override {
    std::lock_guard l(mu);
    launched.push_back(std::filesystem::path(task_dir).filename().string());
    return static_cast<int>(::getpid());
  }
  Status stop(const SupervisorRecord&) override {
    ++stops;
    return ok_status();
  }
  // Ends a task the way a supervisor does: result.json, then the datagram.
  void end(const std::string& id, const TaskResult& r) {
    ASSERT_TRUE(dir.write_result(id, r).ok());
    TaskEventSender(events_socket_path(dir.root())).send(id);
  }
  const StateDir& dir;
  std::mutex mu;
  std::vector<std::string> launched;
  std::atomic<int> stops{0};
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
  void SetUp() override {
    ASSERT_TRUE(dir.init().ok());
    auto g = EpochGuard::open(epoch_file_path(root));
    ASSERT_TRUE(g.ok()) << g.error().message;
    epochs = std::move(*g);
  }
  void TearDown() override { stop(); }
  // An interval of an hour means: no heartbeat and no periodic report check in a test.
  void start(std::chrono::milliseconds heartbeat_interval = 20ms) {
    TaskManagerConfig tcfg;
    tcfg.node = "n1";
    tcfg.clock = &clock;
    tcfg.reserve_port = [] { return Result<int>(4000); };
    tcfg.supervisor_alive = [this](const SupervisorRecord&) { return supervisor_alive.load(); };
    tasks = std::make_unique<TaskManager>(dir, launcher, tcfg);
    tasks->load();
    AgentConfig cfg;
    cfg.node = "n1";
    cfg.scheduler_url = "fake";
    cfg.heartbeat_interval = heartbeat_interval;
    cfg.long_poll_wait_s = 1;
    cfg.backoff_base = 5ms;
    cfg.backoff_cap = 50ms;
    cfg.events_socket = events_socket_path(root);
    cfg.inventory_wait = inventory_wait;
    if (hang_probe) {
      cfg.probe_state_dir = [this] {
        probe_gate.pass();
        return std::string();
      };
    }
    cfg.epochs = epochs.get();
    agent = std::make_unique<Agent>(cfg, hb, poll, rep, inventory, *tasks, notifier);
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
    return testkit::eventually(
        [&] {
          std::lock_guard l(sched.mu);
          return f();
        },
        10s);
  }

  // Lists `a` in the desired state and waits until a report shows it running.
  void launch_and_see_running(const api::Assignment& a) {
    sched.set_desired({a});
    ASSERT_TRUE(until(
        [&] { return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::running; }));
  }
  bool acknowledged(const api::Assignment& a) {
    return testkit::eventually([&] { return std::filesystem::exists(dir.task_dir(a.id) + "/acknowledged"); }, 10s);
  }

  testkit::TempDir tmp{"tessel-agent-test"};
  std::string root = tmp.str();
  StateDir dir{root};
  FakeClock clock{1000};  // Task start times; the tests never need it to move.
  FakeScheduler sched;
  FakeApi hb{sched}, poll{sched}, rep{sched};
  std::atomic<bool> supervisor_alive{true};  // What the TaskManager sees of a recorded supervisor.
  FakeInventory inventory;
  std::chrono::milliseconds inventory_wait{2000};  // The next start()'s AgentConfig::inventory_wait.
  bool hang_probe = false;  // The next start()'s state-dir probe passes probe_gate (and finds no problem).
  Gate probe_gate;
  FakeLauncher launcher{dir};
  RecordingNotifier notifier;
  std::unique_ptr<EpochGuard> epochs;
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
  ASSERT_TRUE(testkit::eventually(
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
  std::string status;  // Updated after each heartbeat and report.
  EXPECT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(notifier.mu);
        status = notifier.last_status;
        return status.find("registered with fake, 1 tasks running") != std::string::npos;
      },
      10s))
      << status;
  // Same desired state again (new version): not launched twice.
  sched.set_desired({a});
  stop();
  EXPECT_EQ(launcher.launched.size(), 1u);
}

// Fencing: a desired state from an older leader epoch (a paused old leader answering
// late) neither starts its new assignments nor kills the ones it leaves out; the next
// answer of the current leader is applied.
TEST_F(AgentLoopTest, DesiredStateOfAnOlderEpochIsNeitherStartedNorKilled) {
  auto a = agent_test::gaudi_assignment({0}, {3});
  auto b = agent_test::gaudi_assignment({1}, {0});
  b.job_id = "j2";
  b.id = api::assignment_id(b.job_id, 0, 0);
  {
    std::lock_guard l(sched.mu);
    sched.desired.epoch = 2;
  }
  start();
  launch_and_see_running(a);
  EXPECT_EQ(epochs->highest(), 2);
  {
    std::lock_guard l(sched.mu);
    sched.desired.epoch = 1;
  }
  sched.set_desired({b});  // The old leader's word: drop a, start b.
  ASSERT_TRUE(testkit::eventually([&] { return epochs->refused_total() >= 2; }, 10s));  // Refused, asked again.
  {
    std::lock_guard l(launcher.mu);
    EXPECT_EQ(launcher.launched, std::vector<std::string>{a.id});
  }
  EXPECT_EQ(launcher.stops.load(), 0);
  // The next heartbeat tells the scheduler what was refused, and from which epoch.
  api::EpochRefusals told;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(sched.mu);
        told = sched.last_refusals;
        return told.total >= 2;
      },
      10s));
  EXPECT_EQ(told.last_epoch, 1);
  EXPECT_EQ(told.highest, 2);
  {
    std::lock_guard l(sched.mu);
    sched.desired.epoch = 3;
  }
  sched.set_desired({b});  // The new leader says the same: applied.
  ASSERT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(launcher.mu);
        return launcher.launched.size() == 2;
      },
      10s));
  EXPECT_TRUE(testkit::eventually([&] { return launcher.stops > 0; }, 10s));
  EXPECT_EQ(epochs->highest(), 3);
  auto reopened = EpochGuard::open(epoch_file_path(root));  // What a restarted agent would start from.
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->highest(), 3);
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
  // Acknowledged in the answer to the report that follows the registration.
  ASSERT_TRUE(acknowledged(a));
  EXPECT_TRUE(tasks->reports().empty());
  std::lock_guard l(sched.mu);
  ASSERT_EQ(sched.last_reports.size(), 1u);
  EXPECT_EQ(sched.last_reports[0].exit_code, 2);
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

TEST_F(AgentLoopTest, TaskEndReachesTheSchedulerAtOnceWithoutAHeartbeat) {
  start(1h);
  auto a = agent_test::gaudi_assignment({0}, {3});
  {
    std::lock_guard l(sched.mu);
    sched.ack_next = {a.id};
  }
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  launcher.end(a.id, TaskResult{api::TaskState::exited, 3, std::nullopt, ""});
  ASSERT_TRUE(
      until([&] { return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::exited; }));
  EXPECT_EQ(sched.last_reports[0].exit_code, 3);
  EXPECT_EQ(sched.heartbeats, 0);
  EXPECT_EQ(sched.registers, 1);
  // The report's answer acknowledged it: the agent forgets the task.
  EXPECT_TRUE(acknowledged(a));
}

TEST_F(AgentLoopTest, FailedReportIsRetried) {
  start(1h);
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  {
    std::lock_guard l(sched.mu);
    sched.failing_reports = 3;
  }
  launcher.end(a.id, TaskResult{api::TaskState::exited, 0, std::nullopt, ""});
  ASSERT_TRUE(
      until([&] { return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::exited; }));
  EXPECT_EQ(sched.failed_reports, 3);
  EXPECT_EQ(sched.heartbeats, 0);
}

TEST_F(AgentLoopTest, ReportToASchedulerThatForgotTheNodeRegistersAgain) {
  start(1h);
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  {
    std::lock_guard l(sched.mu);
    sched.knows_node = false;
    sched.ack_next = {a.id};
  }
  launcher.end(a.id, TaskResult{api::TaskState::exited, 0, std::nullopt, ""});
  ASSERT_TRUE(until([&] { return sched.registers == 2; }));
  // The registration carried the end; the report after it brings the ack.
  EXPECT_TRUE(acknowledged(a));
  EXPECT_EQ(sched.heartbeats, 0);
}

TEST_F(AgentLoopTest, HeartbeatsCarryNoTasks) {
  start();
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  ASSERT_TRUE(until([&] { return sched.heartbeats > 3; }));
  EXPECT_EQ(sched.heartbeats_with_tasks, 0);
  EXPECT_GE(sched.reports, 1);
}

// A vendor tool that hangs delays no heartbeat by more than inventory_wait: the
// heartbeats go on with the last inventory, and no second read starts while it hangs.
TEST_F(AgentLoopTest, AHungInventoryReadDelaysNoHeartbeat) {
  inventory_wait = 30ms;
  start();
  ASSERT_TRUE(until([&] { return sched.heartbeats > 2; }));
  inventory.gate.hang();
  int reads_when_hung = 0;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(inventory.gate.mu);
        reads_when_hung = inventory.gate.calls;
        return inventory.gate.in_flight == 1;
      },
      10s));
  int heartbeats_when_hung = 0;
  {
    std::lock_guard l(sched.mu);
    heartbeats_when_hung = sched.heartbeats;
  }
  ASSERT_TRUE(until([&] { return sched.heartbeats >= heartbeats_when_hung + 5; }));
  {
    std::lock_guard l(inventory.gate.mu);
    EXPECT_EQ(inventory.gate.calls, reads_when_hung);
    EXPECT_EQ(inventory.gate.max_in_flight, 1);
  }
  inventory.gate.release();
  ASSERT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(inventory.gate.mu);
        return inventory.gate.calls > reads_when_hung;
      },
      10s));
}

// A state-dir write that hangs (a stalled disk) delays no heartbeat by more than
// inventory_wait either: the heartbeats go on, reporting the node degraded while the
// write has not ended, no second probe starts meanwhile, and once it ends the node is
// no longer degraded.
TEST_F(AgentLoopTest, AHungStateDirProbeDelaysNoHeartbeatAndReportsTheNodeDegraded) {
  inventory_wait = 30ms;
  hang_probe = true;
  start();
  ASSERT_TRUE(until([&] { return sched.heartbeats > 2 && sched.last_degraded.empty(); }));
  probe_gate.hang();
  int probes_when_hung = 0;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        std::lock_guard l(probe_gate.mu);
        probes_when_hung = probe_gate.calls;
        return probe_gate.in_flight == 1;
      },
      10s));
  int heartbeats_when_hung = 0;
  {
    std::lock_guard l(sched.mu);
    heartbeats_when_hung = sched.heartbeats;
  }
  ASSERT_TRUE(until([&] { return sched.heartbeats >= heartbeats_when_hung + 5; }));
  {
    std::lock_guard l(sched.mu);
    EXPECT_EQ(sched.last_degraded, "agent state dir: a write has not ended after 30 ms");
  }
  {
    std::lock_guard l(probe_gate.mu);
    EXPECT_EQ(probe_gate.calls, probes_when_hung);
    EXPECT_EQ(probe_gate.max_in_flight, 1);
  }
  probe_gate.release();
  ASSERT_TRUE(until([&] { return sched.last_degraded.empty(); }));
}

TEST_F(AgentLoopTest, SupervisorThatDiedWithoutAWordIsFoundByThePeriodicCheck) {
  supervisor_alive = false;
  start();
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  // The supervisor recorded itself, then died: no result, no datagram.
  ASSERT_TRUE(write_file_atomic(dir.task_dir(a.id) + "/supervisor.json", serialize(SupervisorRecord{999999, 1})).ok());
  ASSERT_TRUE(
      until([&] { return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::exited; }));
  EXPECT_NE(sched.last_reports[0].message.find("supervisor died"), std::string::npos) << sched.last_reports[0].message;
}

TEST_F(AgentLoopTest, NodeIsDegradedWhileTheStateDirCannotBeWrittenAndRecovers) {
  // The probe's file cannot be made (a directory is in its way, whoever we are).
  std::filesystem::create_directory(root + "/.write-probe");
  start();
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  EXPECT_EQ(sched.last_degraded, "agent state dir: Is a directory");  // Registered so.
  const int heartbeats = sched.heartbeats;
  ASSERT_TRUE(until([&] { return sched.heartbeats > heartbeats; }));
  EXPECT_EQ(sched.last_degraded, "agent state dir: Is a directory");
  std::filesystem::remove(root + "/.write-probe");
  ASSERT_TRUE(until([&] { return sched.last_degraded.empty(); }));
}

TEST_F(AgentLoopTest, LaunchOnAStateDirThatCannotBeWrittenFailsAtOnceWithTheReason) {
  start(1h);
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  // started.log is a directory: recording the start fails.
  std::filesystem::remove(root + "/started.log");
  std::filesystem::create_directory(root + "/started.log");
  auto a = agent_test::gaudi_assignment({0}, {3});
  sched.set_desired({a});
  ASSERT_TRUE(until([&] {
    return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::failed_to_start;
  }));
  EXPECT_EQ(sched.last_reports[0].message.rfind("agent state dir: ", 0), 0u) << sched.last_reports[0].message;
  EXPECT_NE(sched.last_reports[0].message.find("Is a directory"), std::string::npos) << sched.last_reports[0].message;
  {
    std::lock_guard l(launcher.mu);
    EXPECT_TRUE(launcher.launched.empty());
  }
  // Acknowledged: forgotten, although nothing of it could be written.
  {
    std::lock_guard l(sched.mu);
    sched.ack_next = {a.id};
  }
  agent->mark_reports_dirty();
  EXPECT_TRUE(testkit::eventually([&] { return tasks->reports().empty(); }, 10s));
  sched.set_desired({a});  // Listed again: never started twice.
  stop();
  EXPECT_TRUE(launcher.launched.empty());
}

TEST_F(AgentLoopTest, ResultNotRecordedIsReportedWithTheSupervisorsReasonAndNoExitCode) {
  start(1h);
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  // The supervisor could not write its result and said why, as its last act (it could
  // not even record itself, and it may still be exiting: the launched pid, this test,
  // lives): its ranks are gone.
  TaskEventSender(events_socket_path(root)).send(a.id, "write result.json.tmp: No space left on device");
  ASSERT_TRUE(
      until([&] { return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::exited; }));
  EXPECT_FALSE(sched.last_reports[0].exit_code);
  EXPECT_EQ(sched.last_reports[0].message, "result not recorded: write result.json.tmp: No space left on device");
}

TEST_F(AgentLoopTest, FinishedTaskIsReportedAgainUntilAcknowledged) {
  start();
  auto a = agent_test::gaudi_assignment({0}, {3});
  ASSERT_TRUE(until([&] { return sched.registers == 1; }));
  ASSERT_NO_FATAL_FAILURE(launch_and_see_running(a));
  launcher.end(a.id, TaskResult{api::TaskState::exited, 1, std::nullopt, ""});
  int reports_at_end = 0;
  ASSERT_TRUE(until([&] {
    reports_at_end = sched.reports;
    return sched.last_reports.size() == 1 && sched.last_reports[0].state == api::TaskState::exited;
  }));
  // The scheduler holds the ack back (a gang rank whose job is not decided): the
  // periodic check sends the report again until it comes.
  ASSERT_TRUE(until([&] { return sched.reports >= reports_at_end + 2; }));
  {
    std::lock_guard l(sched.mu);
    sched.ack_next = {a.id};
  }
  EXPECT_TRUE(acknowledged(a));
}

TEST_F(AgentLoopTest, StopCancelsAReportInFlight) {
  {
    std::lock_guard l(sched.mu);
    sched.block_reports = true;
  }
  start(1h);
  ASSERT_TRUE(until([&] { return sched.reports_in_flight == 1; }));  // The one after registering.
  stop();  // Returns only once run() did: the reporter was not left hanging.
  EXPECT_EQ(sched.reports_in_flight, 0);
}

}  // namespace
