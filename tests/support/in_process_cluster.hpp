#pragma once
// An in-process cluster for tests: the real scheduler Service (in-memory SQLite,
// FakeClock, 127.0.0.1:0) and N real Agents talking to it over loopback HTTP, each
// with a fake inventory (8 Gaudi cards) and a fake launcher: a "task" runs until
// the test ends it the way a supervisor does (result on disk, then the datagram on
// events.sock). Heartbeats are an hour apart, so whatever a test sees happen was
// driven by events, not by a heartbeat. Liveness runs only when the test moves the
// FakeClock and calls check_liveness(). Nothing sleeps: waits poll with a deadline.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "eventually.hpp"
#include "temp_dir.hpp"
#include "tessel/agent/agent.hpp"
#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::testkit {

class InProcessCluster {
 public:
  explicit InProcessCluster(scheduler::StateOptions opts = {});
  ~InProcessCluster();

  // Starts (or restarts, keeping its state dir) the agent of `node`.
  void start_agent(const std::string& node);
  // Stops the agent (its "tasks" keep running, as under systemd's KillMode=process).
  void stop_agent(const std::string& node);

  // REST, as a user would (asserts the status).
  nlohmann::json submit(const nlohmann::json& spec);
  nlohmann::json job(const std::string& id);
  void cancel(const std::string& id);
  bool wait_job_state(const std::string& id, const std::string& state);

  // What the fake launchers saw: assignment ids launched on `node`, and stop requests.
  std::vector<std::string> launched(const std::string& node);
  int stops(const std::string& node);
  bool wait_launched(const std::string& node, const std::string& assignment_id);
  // The environment the agent gave local rank `local_rank` of a launched task (launch.json).
  std::map<std::string, std::string> task_env(const std::string& node, const std::string& assignment_id,
                                              int local_rank = 0);
  // Ends a running task as its supervisor would: exit code, or a signal when >= 0.
  void end_task(const std::string& node, const std::string& assignment_id, int exit_code, int signal = -1);

  // Sends `node`'s heartbeat now, as its agent would (theirs are an hour apart here).
  void heartbeat(const std::string& node);

  FakeClock& clock() { return clock_; }
  scheduler::Service& service() { return *service_; }

 private:
  struct Node;
  FakeClock clock_;
  std::unique_ptr<scheduler::Store> store_;
  std::unique_ptr<scheduler::Service> service_;
  TempDir root_;
  std::map<std::string, std::unique_ptr<Node>> nodes_;
};

}  // namespace tessel::testkit
