// The agent's loops against an in-process fake scheduler, fake inventory and fake
// launcher: registration, READY, 404 re-registration, backoff, launch, fencing, acks,
// and task reports (sent at once on a supervisor's datagram, retried, never in heartbeats).
#include "agent_loop_fixture.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace tessel::agent::testing;

namespace {

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

// Once the scheduler answered a tag for its inventory, heartbeats carry the cards'
// readings only, until the cards change (a card falls sick: whole again) or the
// scheduler holds another inventory (409, a restart: whole at once, no backoff).
TEST_F(AgentLoopTest, HeartbeatsCarryReadingsWhileTheSchedulerHoldsTheInventory) {
  api::NodeInventory inv;
  inv.devices.resize(2);
  inv.devices[1].index = inv.devices[1].module_id = 1;
  inv.devices[0].utilization_pct = 10;
  inventory.set(inv);
  sched.tag = 7;
  start();
  ASSERT_TRUE(until([&] { return sched.readings_heartbeats >= 2; }));
  int whole = 0;
  {
    std::lock_guard l(sched.mu);
    EXPECT_EQ(sched.held, inv);
    whole = sched.whole_heartbeats;
  }
  inv.devices[0].utilization_pct = 90;  // A reading: still readings.
  inventory.set(inv);
  ASSERT_TRUE(until([&] { return sched.held.devices[0].utilization_pct == 90; }));
  {
    std::lock_guard l(sched.mu);
    EXPECT_EQ(sched.whole_heartbeats, whole);
  }
  inv.devices[1].healthy = false;  // The shape: whole.
  inv.devices[1].health_reason = "uncorrectable ECC error";
  inventory.set(inv);
  ASSERT_TRUE(until([&] { return sched.whole_heartbeats > whole && !sched.held.devices[1].healthy; }));

  {
    std::lock_guard l(sched.mu);
    sched.tag = 8;  // It restarted.
    whole = sched.whole_heartbeats;
  }
  ASSERT_TRUE(until([&] { return sched.refused_readings >= 1 && sched.whole_heartbeats > whole; }));
  const int readings = [&] {
    std::lock_guard l(sched.mu);
    return sched.readings_heartbeats;
  }();
  ASSERT_TRUE(until([&] { return sched.readings_heartbeats > readings; }));
  std::lock_guard l(sched.mu);
  EXPECT_EQ(sched.refused_readings, 1);
  EXPECT_EQ(sched.held, inv);
}

// A scheduler that answers no tag (older ones) gets the whole inventory every time.
TEST_F(AgentLoopTest, WithoutATagEveryHeartbeatCarriesTheWholeInventory) {
  start();
  ASSERT_TRUE(until([&] { return sched.whole_heartbeats >= 3; }));
  std::lock_guard l(sched.mu);
  EXPECT_EQ(sched.readings_heartbeats, 0);
}
