#include "tessel/agent/state_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tessel/agent/durable_file.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;

namespace {

class StateDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.init().ok()); }
  void write(const std::string& rel, const std::string& text) { std::ofstream(root + "/" + rel) << text; }
  testkit::TempDir tmp{"tessel-agent-test"};
  std::string root = tmp.str();
  StateDir dir{root};
};

TEST_F(StateDirTest, RoundTripsAllFiles) {
  auto a = agent_test::gaudi_assignment({0, 1}, {4, 0});
  ASSERT_TRUE(dir.record_started(a).ok());
  LaunchPlan p{a.id, "/tmp", {RankLaunch{{"/bin/true"}, {{"A", "1"}}, dir.log_path(a.id, 0), 1234}}, 5, 3, 1000, 1000,
               "u",  false};
  ASSERT_TRUE(dir.write_launch(p).ok());
  ASSERT_TRUE(write_file_durable(dir.task_dir(a.id) + "/supervisor.json", serialize(SupervisorRecord{77, 99})).ok());
  TaskResult r{api::TaskState::exited, 3, std::nullopt, "boom"};
  ASSERT_TRUE(dir.write_result(a.id, r).ok());
  auto t = dir.load(a.id);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->assignment, a);
  EXPECT_EQ(t->supervisor, (SupervisorRecord{77, 99}));
  EXPECT_EQ(t->result, r);
  EXPECT_EQ(t->port, 1234);
  EXPECT_TRUE(t->launched);
  EXPECT_FALSE(t->acknowledged);
  auto plan = parse_launch_plan(*read_small_file(dir.task_dir(a.id) + "/launch.json"));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(*plan, p);
}

// The supervisor's pulling_image marker reads as the task's pull in progress.
TEST_F(StateDirTest, PullingImageMarkerIsRead) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  EXPECT_FALSE(dir.load(a.id)->pulling_image);
  write("tasks/" + a.id + "/" + kPullingImageFile, "localhost/train:1\n");
  EXPECT_TRUE(dir.load(a.id)->pulling_image);
}

// The last delivered user signal survives the agent; a missing or torn file reads as none.
TEST_F(StateDirTest, SignalsDoneRoundTripsAndABadFileReadsAsNone) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  EXPECT_EQ(dir.load(a.id)->signals_done, std::nullopt);
  ASSERT_TRUE(dir.write_signals_done(a.id, 0).ok());
  EXPECT_EQ(dir.load(a.id)->signals_done, 0);
  ASSERT_TRUE(dir.write_signals_done(a.id, 17).ok());
  EXPECT_EQ(dir.load(a.id)->signals_done, 17);
  for (const char* bad : {"", "x", "-1", "3 4", "99999999999999999999"}) {
    write("tasks/" + a.id + "/signals_done", bad);
    auto t = dir.load(a.id);
    ASSERT_TRUE(t.ok()) << bad;
    EXPECT_EQ(t->signals_done, std::nullopt) << bad;
  }
}

TEST_F(StateDirTest, StartedTwiceIsRefused) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  auto again = dir.record_started(a);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already started"), std::string::npos);
  EXPECT_EQ(again.error().code, ErrorCode::conflict);
}

TEST_F(StateDirTest, AStateDirThatCannotBeWrittenIsUnavailable) {
  // started.log is a directory: appending to it fails, for root too.
  std::filesystem::remove(root + "/started.log");
  std::filesystem::create_directory(root + "/started.log");
  auto st = dir.record_started(agent_test::gaudi_assignment({0}, {0}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::unavailable);
  EXPECT_NE(st.error().message.find("Is a directory"), std::string::npos) << st.error().message;
}

TEST_F(StateDirTest, ProbeWritesAndRemovesASmallFile) {
  EXPECT_TRUE(dir.probe().ok());
  EXPECT_FALSE(std::filesystem::exists(root + "/.write-probe"));
  // The probe's file cannot be made: the bare errno text.
  std::filesystem::create_directory(root + "/.write-probe");
  auto st = dir.probe();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "Is a directory");
}

TEST_F(StateDirTest, WorkDirBelongsToTheJobsUser) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  const int uid = ::geteuid() == 0 ? 65534 : -1;  // Only root may give it away.
  ASSERT_TRUE(dir.make_work_dir(a.id, uid, uid).ok());
  struct stat st {};
  ASSERT_EQ(::stat(dir.work_dir(a.id).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid == -1 ? ::geteuid() : static_cast<uid_t>(uid));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(dir.work_dir(a.id), dir.task_dir(a.id) + "/work");
  EXPECT_FALSE(dir.make_work_dir(a.id, -1, -1).ok());  // Made once, with its task.
}

// A job's user reaches its own work dir by its absolute path and lists nothing above
// it; the files that hold its env, command and logs are the agent's alone.
TEST_F(StateDirTest, DirsAboveAWorkDirAreTraverseOnlyAndFilesPrivate) {
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  ASSERT_TRUE(dir.init().ok());  // Again, as at each agent start: the modes are set, not assumed.
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  LaunchPlan p{a.id,
               dir.work_dir(a.id),
               {RankLaunch{{"/bin/true"}, {{"SECRET", "x"}}, dir.log_path(a.id, 0), 1}},
               0,
               1,
               std::nullopt,
               std::nullopt,
               "",
               false};
  ASSERT_TRUE(dir.write_launch(p).ok());
  ASSERT_TRUE(dir.make_work_dir(a.id, -1, -1).ok());
  auto mode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode(root), 0711u);
  EXPECT_EQ(mode(root + "/tasks"), 0711u);
  EXPECT_EQ(mode(dir.task_dir(a.id)), 0711u);
  EXPECT_EQ(mode(dir.work_dir(a.id)), 0700u);
  EXPECT_EQ(mode(dir.task_dir(a.id) + "/assignment.json"), 0600u);
  EXPECT_EQ(mode(dir.task_dir(a.id) + "/launch.json"), 0600u);
  EXPECT_EQ(mode(root + "/started.log"), 0600u);
}

TEST_F(StateDirTest, UnsafeIdsAreRefused) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  for (std::string bad : {"../x", "..", "", "a/b", "a b"}) {
    a.id = bad;
    EXPECT_FALSE(dir.record_started(a).ok()) << bad;
  }
}

TEST_F(StateDirTest, CorruptFilesAreSkippedWithClearProblem) {
  auto good = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(good).ok());
  auto bad = good;
  bad.id = "j2.0.0";
  ASSERT_TRUE(dir.record_started(bad).ok());
  write("tasks/j2.0.0/result.json", "{\"state\": \"exploded\"");
  std::filesystem::create_directories(root + "/tasks/j3.0.0");
  write("tasks/j3.0.0/assignment.json", "not json");
  auto scan = dir.scan();
  ASSERT_EQ(scan.tasks.size(), 1u);
  EXPECT_EQ(scan.tasks[0].id, good.id);
  EXPECT_EQ(scan.started_ids, (std::set<std::string>{good.id, "j2.0.0", "j3.0.0"}));
  ASSERT_EQ(scan.problems.size(), 2u);
  for (const auto& p : scan.problems)
    EXPECT_TRUE(p.find("result.json") != std::string::npos || p.find("assignment.json") != std::string::npos) << p;
}

TEST_F(StateDirTest, ResultParserRejectsBadStates) {
  EXPECT_FALSE(parse_task_result("{\"state\":\"running\"}").ok());
  EXPECT_FALSE(parse_task_result("[]").ok());
  EXPECT_FALSE(parse_supervisor_record("{\"pid\":1,\"start_time\":2}").ok());
  EXPECT_FALSE(parse_launch_plan("{\"assignment_id\":\"a\",\"workdir\":\"/\",\"time_limit_s\":0,"
                                 "\"kill_grace_s\":1,\"ranks\":[]}")
                   .ok());
}

// Bad files in the state dir are invalid_argument naming the field at fault; file
// system failures carry the code their errno names.
TEST_F(StateDirTest, ErrorsCarryTheirCodes) {
  auto plan = parse_launch_plan(
      "{\"assignment_id\":\"a\",\"workdir\":\"/\",\"time_limit_s\":-1,\"kill_grace_s\":1,"
      "\"ranks\":[{\"argv\":[\"x\"],\"env\":{},\"log_path\":\"l\"}]}");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(plan.error().field, "time_limit_s");
  auto sup = parse_supervisor_record("{\"pid\":1,\"start_time\":2}");
  ASSERT_FALSE(sup.ok());
  EXPECT_EQ(sup.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(sup.error().field, "pid");
  auto res = parse_task_result("{\"state\":\"running\"}");
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.error().field, "state");
  EXPECT_EQ(parse_task_result("not json").error().code, ErrorCode::invalid_argument);

  auto unsafe = dir.load("..");
  ASSERT_FALSE(unsafe.ok());
  EXPECT_EQ(unsafe.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(unsafe.error().field, "id");
  auto missing = dir.load("j9.0.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::not_found) << missing.error().message;

  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  ASSERT_TRUE(dir.make_work_dir(a.id, -1, -1).ok());
  auto twice = dir.make_work_dir(a.id, -1, -1);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::conflict) << twice.error().message;
  write("big", std::string(100, 'x'));
  auto big = read_small_file(root + "/big", 10);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::payload_too_large);
}

TEST_F(StateDirTest, AcknowledgedTasksAreCollectedWhenOld) {
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(dir.record_started(a).ok());
  ASSERT_TRUE(dir.make_work_dir(a.id, -1, -1).ok());
  write("tasks/" + a.id + "/work/output", "the job's");
  ASSERT_TRUE(dir.mark_acknowledged(a.id).ok());
  auto t = dir.load(a.id);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->acknowledged);
  EXPECT_EQ(dir.remove_acknowledged_older_than(t->started_unix_ms + 10, 1000), 0);
  EXPECT_EQ(dir.remove_acknowledged_older_than(t->started_unix_ms + 5000, 1000), 1);
  EXPECT_FALSE(std::filesystem::exists(dir.task_dir(a.id)));  // Its work dir with it.
  auto scan = dir.scan();
  EXPECT_TRUE(scan.tasks.empty());
  EXPECT_EQ(scan.started_ids.count(a.id), 1u);  // started.log still says "never again".
}

}  // namespace
