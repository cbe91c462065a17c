#pragma once
// The agent's loops against an in-process fake scheduler, fake inventory and fake
// launcher: the fakes and the AgentLoopTest fixture shared by agent_loop_test.cpp
// (registration, fencing, launches, reports) and agent_health_loop_test.cpp (hung
// vendor tools and state-dir probes, degraded nodes).
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

namespace tessel::agent::testing {

using namespace std::chrono_literals;

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
  // Readings: 0, answers no inventory tag (a scheduler before them); else the tag of the
  // inventory it holds, given in answers that took a whole one. Readings of another
  // tag are answered 409, as the real one does.
  int64_t tag = 0;
  int whole_heartbeats = 0, readings_heartbeats = 0, refused_readings = 0;
  api::NodeInventory held;  // The last whole inventory, with the last readings applied.

  void set_desired(std::vector<api::Assignment> as) {
    std::lock_guard l(mu);
    desired.assignments = std::move(as);
    ++desired.version;
    cv.notify_all();
  }
};

// What the real SchedulerClient answers when no answer came, and for an error status
// with the API's error envelope.
inline Error unreachable() { return Error::unavailable("connection refused").wrap("no answer"); }
inline Error http_error(int status, const std::string& message) {
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
    s_.held = req.inventory;
    api::RegisterResponse r{1};
    r.inventory_tag = s_.tag;
    return r;
  }
  Result<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) override {
    std::lock_guard l(s_.mu);
    if (!s_.reachable) return unreachable();
    if (!s_.knows_node) return http_error(404, "unknown node");
    ++s_.heartbeats;
    if (req.tasks) ++s_.heartbeats_with_tasks;
    if (req.readings && req.readings->inventory_tag != s_.tag) {
      ++s_.refused_readings;
      return http_error(409, "this scheduler holds another inventory of node n1");
    }
    if (req.readings) {
      ++s_.readings_heartbeats;
      if (!api::apply_readings(s_.held, req.readings->devices)) return http_error(400, "readings: wrong cards");
    } else {
      ++s_.whole_heartbeats;
      s_.held = req.inventory;
    }
    s_.last_degraded = req.degraded;
    s_.last_refusals = req.epoch_refusals;
    api::HeartbeatResponse r;
    r.inventory_tag = s_.tag;
    return r;
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
    std::lock_guard l(mu);
    return current;
  }
  void set(api::NodeInventory inv) {
    std::lock_guard l(mu);
    current = std::move(inv);
  }
  Gate gate;
  std::mutex mu;
  api::NodeInventory current;  // What read() returns (empty unless a test sets it).
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

}  // namespace tessel::agent::testing
