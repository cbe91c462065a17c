// The agent's loops when the node's own parts stall or fail: a hung vendor tool or
// state-dir write delays no heartbeat, a state dir that cannot be written degrades the
// node and fails launches at once (the fixture: agent_loop_fixture.hpp).
#include "agent_loop_fixture.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace tessel::agent::testing;

namespace {

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

}  // namespace
