// Runs the real supervisor (the tessel-supervisor program) through DetachedLauncher.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/launcher.hpp"
#include "tessel/agent/log_cap.hpp"
#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_events.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace std::chrono_literals;

namespace {

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.init().ok()); }

  // Writes a plan of `ranks` ranks running `argv` (changed by `edit`) and starts its supervisor.
  std::string start(const std::string& id, std::vector<std::string> argv, int64_t limit = 0, int64_t grace = 1,
                    int ranks = 1, const std::function<void(LaunchPlan&)>& edit = {}) {
    auto a = agent_test::gaudi_assignment({0}, {0});
    a.id = id;
    EXPECT_TRUE(dir.record_started(a).ok());
    LaunchPlan p{id, dir.task_dir(id), {}, limit, grace, std::nullopt, std::nullopt, "", true};
    for (int i = 0; i < ranks; ++i)
      p.ranks.push_back(
          RankLaunch{argv, {{"PATH", "/usr/bin:/bin"}, {"R", std::to_string(i)}}, dir.log_path(id, i), 0});
    if (edit) edit(p);
    EXPECT_TRUE(dir.write_launch(p).ok());
    auto pid = launcher.launch(dir.task_dir(id));
    EXPECT_TRUE(pid.ok());
    if (pid.ok()) supervisor_pid = *pid;
    return dir.task_dir(id);
  }
  // The next assignment id a supervisor sent to `events` (the agent's side), checking on
  // receipt whether its task had a result then; nullopt when none came within 10 s.
  struct Event {
    std::string id;
    bool had_result = false;
    std::string note;
  };
  std::optional<Event> next_event(TaskEventSocket& events) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (pending.empty()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      auto got = events.wait(left);
      if (!got) return std::nullopt;
      for (auto& ev : *got) {
        auto s = dir.load(ev.id);
        pending.push_back(Event{ev.id, s.ok() && s->result.has_value(), ev.note});
      }
    }
    Event e = pending.front();
    pending.erase(pending.begin());
    return e;
  }
  bool supervisor_gone() {
    return testkit::eventually([&] { return !process_start_time(supervisor_pid).has_value(); }, 10s);
  }
  std::optional<TaskResult> wait_result(const std::string& id, std::chrono::milliseconds t = 10s) {
    std::optional<TaskResult> res;
    testkit::eventually(
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

  testkit::TempDir tmp{"tessel-agent-test"};
  std::string root = tmp.str();
  StateDir dir{root};
  DetachedLauncher launcher{TESSEL_SUPERVISOR_BIN};
  int supervisor_pid = 0;
  std::vector<Event> pending;
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

// A rank that prints past the per-rank log cap keeps the cap's worth and a marker;
// the rest is dropped, and the result names the rank. Another rank under it is left whole.
TEST_F(SupervisorTest, OutputPastTheLogCapIsDroppedWithAMarker) {
  constexpr int64_t kCap = 64 * 1024;
  start("cap.0.0", {"sh", "-c", "if [ $R = 0 ]; then head -c 1000000 /dev/zero | tr '\\0' x; else echo small; fi"}, 0,
        1, 2, [](LaunchPlan& p) { p.log_cap_bytes = kCap; });
  auto r = wait_result("cap.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->logs_capped, std::vector<int>{0});
  const std::string big = log("cap.0.0");
  const std::string marker = log_cap_marker(kCap);
  EXPECT_EQ(big.size(), static_cast<size_t>(kCap) + marker.size());
  EXPECT_EQ(big.substr(0, 10), "xxxxxxxxxx");
  EXPECT_EQ(big.substr(kCap), marker);
  EXPECT_NE(marker.find("log cap of 64 KiB"), std::string::npos) << marker;
  std::ifstream second(dir.log_path("cap.0.0", 1));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(second), {}), "small\n");
}

TEST(LogCap, CutsOnceThenKeepsTheCapAndTheMarker) {
  testkit::TempDir tmp("tessel-log-cap");
  const std::string path = tmp.str("rank.log");
  std::ofstream(path) << std::string(5000, 'a');
  EXPECT_FALSE(enforce_log_cap(path, 8000));  // Under the cap: untouched.
  EXPECT_FALSE(enforce_log_cap(path, 0));
  EXPECT_FALSE(enforce_log_cap(tmp.str("missing.log"), 10));
  EXPECT_TRUE(enforce_log_cap(path, 1000));
  const std::string marker = log_cap_marker(1000);
  EXPECT_NE(marker.find("1000 bytes"), std::string::npos);
  auto read = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(), std::string(1000, 'a') + marker);
  std::ofstream(path, std::ios::app) << std::string(3000, 'b');  // Written since.
  EXPECT_TRUE(enforce_log_cap(path, 1000));
  EXPECT_EQ(read(), std::string(1000, 'a') + marker);
  EXPECT_TRUE(enforce_log_cap(path, 1000));  // Nothing new: still cut, unchanged.
  EXPECT_EQ(read(), std::string(1000, 'a') + marker);
  EXPECT_NE(log_cap_marker(int64_t{1024} << 20).find("1024 MiB"), std::string::npos);
}

TEST_F(SupervisorTest, SupervisorIsDetachedFromUs) {
  start("d.0.0", {"sleep", "1000"});
  std::optional<SupervisorRecord> sup;
  ASSERT_TRUE(testkit::eventually(
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
  ASSERT_TRUE(testkit::eventually(
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
  EXPECT_TRUE(testkit::eventually([&] { return !process_start_time(child).has_value(); }, 5s));
  EXPECT_TRUE(testkit::eventually([&] { return !process_start_time(sup->pid).has_value(); }, 5s));
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

TEST_F(SupervisorTest, MissingWorkdirFailsToStartWithTheReason) {
  start("w.0.0", {"pwd"}, 0, 1, 1, [](LaunchPlan& p) { p.workdir = "/nonexistent-tessel-workdir"; });
  auto r = wait_result("w.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::failed_to_start);
  EXPECT_EQ(r->message, "workdir /nonexistent-tessel-workdir: No such file or directory");
  EXPECT_EQ(log("w.0.0"), "");  // The job never ran.
}

// Root only: the plan switches to `nobody`.
TEST_F(SupervisorTest, ROOT_OwnWorkdirIsEnteredAsTheJobsUserTheAgentsBefore) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a rank as nobody";
  const int nobody = 65534;
  auto as_nobody = [&](const std::string& workdir, bool as_user) {
    return [=](LaunchPlan& p) {
      p.uid = nobody;
      p.gid = nobody;
      p.workdir = workdir;
      p.workdir_as_user = as_user;
    };
  };
  // The job's own workdir, closed to nobody: refused, although root could enter it.
  const std::string closed = root + "/closed";
  ASSERT_EQ(::mkdir(closed.c_str(), 0700), 0);
  start("c.0.0", {"pwd"}, 0, 1, 1, as_nobody(closed, true));
  auto r = wait_result("c.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, api::TaskState::failed_to_start);
  EXPECT_EQ(r->message, "workdir " + closed + ": Permission denied");
  // The agent's per-task dir, owned by nobody under a state dir closed to it (this
  // test's temp dir is 0700): entered first, then nobody writes there.
  auto a = agent_test::gaudi_assignment({0}, {0});
  a.id = "o.0.0";
  ASSERT_TRUE(dir.record_started(a).ok());
  ASSERT_TRUE(dir.make_work_dir(a.id, nobody, nobody).ok());
  start("o2.0.0", {"sh", "-c", "id -u > uid && pwd"}, 0, 1, 1, as_nobody(dir.work_dir(a.id), false));
  r = wait_result("o2.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->message << log("o2.0.0");
  auto uid = read_small_file(dir.work_dir(a.id) + "/uid");
  EXPECT_EQ(uid.ok() ? *uid : uid.error().message, "65534\n");
}

// Root only: a job running as nobody reaches its own per-task dir by its absolute
// path (the dirs above it are 0711), and lists none of them, reads no other task's
// files and enters no other task's work dir.
TEST_F(SupervisorTest, ROOT_AJobReachesItsOwnWorkDirByPathAndNothingElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a rank as nobody";
  const int nobody = 65534;
  auto other = agent_test::gaudi_assignment({0}, {0});
  other.id = "other.0.0";
  ASSERT_TRUE(dir.record_started(other).ok());
  ASSERT_TRUE(dir.make_work_dir(other.id, -1, -1).ok());  // Another user's (root's here).
  ASSERT_TRUE(write_file_durable(dir.log_path(other.id, 0), "secret\n").ok());
  auto own = agent_test::gaudi_assignment({0}, {0});
  own.id = "own.0.0";
  ASSERT_TRUE(dir.record_started(own).ok());
  ASSERT_TRUE(dir.make_work_dir(own.id, nobody, nobody).ok());
  const std::string script =
      "cd \"$1\" && touch by-path && echo own-ok; "
      "ls \"$2\" && echo listed-root; ls \"$2/tasks\" && echo listed-tasks; ls \"$3\" && echo listed-own-task; "
      "cat \"$4/assignment.json\" && echo read-other-assignment; cat \"$4/rank0.log\" && echo read-other-log; "
      "ls \"$4/work\" && echo entered-other-work; true";
  start("run.0.0",
        {"sh", "-c", "{ " + script + "; } >out 2>/dev/null", "sh", dir.work_dir(own.id), root, dir.task_dir(own.id),
         dir.task_dir(other.id)},
        0, 1, 1, [&](LaunchPlan& p) {
          p.uid = nobody;
          p.gid = nobody;
          p.workdir = dir.work_dir(own.id);
          p.workdir_as_user = false;
        });
  auto r = wait_result("run.0.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->message << log("run.0.0");
  auto out = read_small_file(dir.work_dir(own.id) + "/out");
  EXPECT_EQ(out.ok() ? *out : out.error().message, "own-ok\n");
  EXPECT_TRUE(std::filesystem::exists(dir.work_dir(own.id) + "/by-path"));
}

TEST_F(SupervisorTest, ResultThatCannotBeWrittenIsToldToTheAgentWithTheReason) {
  auto events = TaskEventSocket::bind(events_socket_path(root));
  ASSERT_TRUE(events.ok()) << events.error().message;
  // result.json.tmp is a directory: writing the result fails, whoever we are.
  start("u.0.0", {"sh", "-c", "mkdir result.json.tmp; while [ ! -e go ]; do sleep 0.05; done"});
  auto started = next_event(**events);
  ASSERT_TRUE(started);
  EXPECT_TRUE(started->note.empty());
  ASSERT_TRUE(testkit::eventually(
      [&] { return std::filesystem::is_directory(dir.task_dir("u.0.0") + "/result.json.tmp"); }, 10s));
  std::ofstream(dir.task_dir("u.0.0") + "/go").put('\n');
  auto ended = next_event(**events);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->id, "u.0.0");
  EXPECT_FALSE(ended->had_result);
  EXPECT_NE(ended->note.find("result.json.tmp: Is a directory"), std::string::npos) << ended->note;
  ASSERT_TRUE(supervisor_gone());
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

TEST_F(SupervisorTest, TellsTheAgentWhenRanksStartAndAfterTheResultIsWritten) {
  auto events = TaskEventSocket::bind(events_socket_path(root));
  ASSERT_TRUE(events.ok()) << events.error().message;
  start("e.0.0", {"sleep", "1000"});
  auto started = next_event(**events);
  ASSERT_TRUE(started);
  EXPECT_EQ(started->id, "e.0.0");
  EXPECT_FALSE(started->had_result);
  auto sup = dir.load("e.0.0")->supervisor;
  ASSERT_TRUE(sup);  // Recorded before the ranks started.
  ASSERT_TRUE(launcher.stop(*sup).ok());
  auto ended = next_event(**events);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->id, "e.0.0");
  EXPECT_TRUE(ended->had_result);  // result.json was there when the datagram arrived.
  ASSERT_TRUE(supervisor_gone());
  auto more = (*events)->wait(0ms);
  ASSERT_TRUE(more);
  EXPECT_TRUE(more->empty());  // Two datagrams, no more.
}

TEST_F(SupervisorTest, FailedLaunchTellsTheAgentOnceWithTheResult) {
  auto events = TaskEventSocket::bind(events_socket_path(root));
  ASSERT_TRUE(events.ok()) << events.error().message;
  start("f.0.0", {"no-such-program-tessel"});
  auto ended = next_event(**events);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->id, "f.0.0");
  EXPECT_TRUE(ended->had_result);
  ASSERT_TRUE(supervisor_gone());
  auto more = (*events)->wait(0ms);
  ASSERT_TRUE(more);
  EXPECT_TRUE(more->empty());  // The ranks never started: no "started" datagram.
}

TEST_F(SupervisorTest, WorksWithoutAnAgentListening) {
  auto ends_quietly = [&](const std::string& id) {
    start(id, {"sh", "-c", "exit 4"});
    auto r = wait_result(id);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 4);
    ASSERT_TRUE(supervisor_gone());
    auto l = read_small_file(dir.task_dir(id) + "/supervisor.log");
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->find("telling the agent"), std::string::npos) << *l;  // Expected, not news.
  };
  ends_quietly("n.0.0");  // No socket file: ENOENT.
  // A stale socket file, as an agent killed with SIGKILL leaves behind: ECONNREFUSED.
  auto addr = unix_socket_address(events_socket_path(root));
  ASSERT_TRUE(addr.ok());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr), 0);
  ::close(fd);
  ends_quietly("s.0.0");
  // The next agent replaces the stale file.
  EXPECT_TRUE(TaskEventSocket::bind(events_socket_path(root)).ok());
}

TEST_F(SupervisorTest, StateDirTooLongForASocketSkipsTellingAndSaysSoOnce) {
  std::string deep = root + "/" + std::string(120, 'd');
  StateDir long_dir{deep};
  ASSERT_TRUE(long_dir.init().ok());
  EXPECT_FALSE(TaskEventSocket::bind(events_socket_path(deep)).ok());
  auto a = agent_test::gaudi_assignment({0}, {0});
  ASSERT_TRUE(long_dir.record_started(a).ok());
  LaunchPlan p{a.id, long_dir.task_dir(a.id), {}, 0, 1, std::nullopt, std::nullopt, "", true};
  p.ranks.push_back(RankLaunch{{"sh", "-c", "exit 5"}, {{"PATH", "/usr/bin:/bin"}}, long_dir.log_path(a.id, 0), 0});
  ASSERT_TRUE(long_dir.write_launch(p).ok());
  auto pid = launcher.launch(long_dir.task_dir(a.id));
  ASSERT_TRUE(pid.ok());
  supervisor_pid = *pid;
  std::optional<TaskResult> r;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        auto s = long_dir.load(a.id);
        if (s.ok()) r = s->result;
        return r.has_value();
      },
      10s));
  EXPECT_EQ(r->exit_code, 5);
  ASSERT_TRUE(supervisor_gone());
  auto l = read_small_file(long_dir.task_dir(a.id) + "/supervisor.log");
  ASSERT_TRUE(l.ok());
  const std::string& log = *l;
  const auto first = log.find("not telling the agent");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("not telling the agent", first + 1), std::string::npos) << log;
}

}  // namespace
