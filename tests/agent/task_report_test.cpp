#include <gtest/gtest.h>

#include "tessel/agent/task_manager.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;

namespace {

TaskSnapshot snap() {
  TaskSnapshot t;
  t.id = "j.0.0";
  t.started_unix_ms = 1000;
  t.port = 5555;
  return t;
}

TEST(MakeReport, ResultWins) {
  auto t = snap();
  t.result = TaskResult{api::TaskState::exited, 0, 15, "stopped"};
  auto r = make_report(t, true, 2000, 30000);
  EXPECT_EQ(r.state, api::TaskState::exited);
  EXPECT_EQ(r.signal, 15);
  EXPECT_EQ(r.port, 5555);
}

TEST(MakeReport, AliveSupervisorMeansRunning) {
  auto t = snap();
  t.supervisor = SupervisorRecord{10, 20};
  EXPECT_EQ(make_report(t, true, 2000, 30000).state, api::TaskState::running);
}

// While its supervisor pulls the image the task runs in phase pulling_image; a
// result, or a supervisor gone, ends the phase.
TEST(MakeReport, PullingImageIsAPhaseOfARunningTaskOnly) {
  auto t = snap();
  t.supervisor = SupervisorRecord{10, 20};
  EXPECT_EQ(make_report(t, true, 2000, 30000).phase, "");
  t.pulling_image = true;
  auto r = make_report(t, true, 2000, 30000);
  EXPECT_EQ(r.state, api::TaskState::running);
  EXPECT_EQ(r.phase, api::kTaskPhasePullingImage);
  EXPECT_EQ(make_report(t, false, 2000, 30000).phase, "");
  t.result = TaskResult{api::TaskState::failed_to_start, std::nullopt, std::nullopt, "pulling image x: no"};
  EXPECT_EQ(make_report(t, true, 2000, 30000).phase, "");
}

TEST(MakeReport, DeadSupervisorWithoutResultIsExitedWithMessage) {
  auto t = snap();
  t.supervisor = SupervisorRecord{10, 20};
  auto r = make_report(t, false, 2000, 30000);
  EXPECT_EQ(r.state, api::TaskState::exited);
  EXPECT_NE(r.exit_code.value_or(0), 0);
  EXPECT_FALSE(r.message.empty());
}

TEST(MakeReport, EndedWithoutAResultThatCouldNotBeWrittenSaysSoWithoutAnExitCode) {
  auto t = snap();
  t.supervisor = SupervisorRecord{10, 20};
  auto r = make_report(t, false, 2000, 30000, "No space left on device");
  EXPECT_EQ(r.state, api::TaskState::exited);
  EXPECT_FALSE(r.exit_code);
  EXPECT_FALSE(r.signal);
  EXPECT_EQ(r.message, "result not recorded: No space left on device");
  // Running, or a result on disk, wins over the note.
  EXPECT_EQ(make_report(t, true, 2000, 30000, "No space left on device").state, api::TaskState::running);
  t.result = TaskResult{api::TaskState::exited, 4, std::nullopt, ""};
  EXPECT_EQ(make_report(t, false, 2000, 30000, "No space left on device").exit_code, 4);
}

TEST(MakeReport, SupervisorNotYetRecordedWithinGrace) {
  auto t = snap();
  EXPECT_EQ(make_report(t, false, 2000, 30000).state, api::TaskState::running);
  EXPECT_EQ(make_report(t, false, 40000, 30000).state, api::TaskState::failed_to_start);
}

TEST(MakeLaunchPlan, OneRankPerDeviceWithLogsAndPorts) {
  testkit::TempDir tmp{"tessel-agent-test"};
  std::string root = tmp.str();
  StateDir dir(root);
  auto a = agent_test::gaudi_assignment({0, 1}, {4, 0});
  a.spec.task_per_device = true;
  a.spec.time_limit_s = 60;
  api::NodeInventory inv;
  TaskManagerConfig cfg;
  cfg.node = "n1";
  cfg.base_env = {{"PATH", "/bin"}};
  auto p = make_launch_plan(a, inv, dir, cfg, {100, 101});
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->ranks.size(), 2u);
  EXPECT_EQ(p->ranks[1].env.at("HLS_MODULE_ID"), "1");
  EXPECT_EQ(p->ranks[1].env.at("TESSEL_PORT"), "101");
  EXPECT_EQ(p->ranks[1].log_path, root + "/tasks/j1.0.0/rank1.log");
  EXPECT_EQ(p->workdir, root + "/tasks/j1.0.0/work");
  EXPECT_FALSE(p->workdir_as_user);  // The agent's own dir: entered before switching user.
  EXPECT_EQ(p->time_limit_s, 60);
  EXPECT_EQ(p->kill_grace_s, 10);
  EXPECT_FALSE(make_launch_plan(a, inv, dir, cfg, {100}).ok());
}

TEST(MakeLaunchPlan, TheJobsOwnWorkdirIsEnteredAsItsUser) {
  StateDir dir("/state");
  auto a = agent_test::gaudi_assignment({0}, {0});
  a.spec.workdir = "/data/run";
  TaskManagerConfig cfg;
  cfg.run_as = RunAs{1000, 1000, "u"};
  auto p = make_launch_plan(a, api::NodeInventory{}, dir, cfg, {100});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->workdir, "/data/run");
  EXPECT_TRUE(p->workdir_as_user);
  EXPECT_EQ(p->uid, 1000);
}

}  // namespace
