// Issue 28 on the real hierarchy: the real scheduler and agent, tasks fenced in cgroups
// of their own on this machine's cgroup v1 controllers. Root only (ROOT_, skipped with
// a message otherwise). Cards are stand-ins: character devices of major 240, which has
// no driver here, under a temp --dev-root: a card the task may open answers ENXIO,
// one it may not EPERM.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const char* const kControllers[] = {"cpuset", "memory", "devices", "pids", "cpuacct", "freezer"};

// Why this machine cannot run the tests ("" when it can).
std::string why_not_here() {
  if (::geteuid() != 0) return "needs root (cgroups and device nodes)";
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) return "needs the cgroup v1 controllers (this is cgroup2)";
  for (const char* c : kControllers)
    if (::access(("/sys/fs/cgroup/" + std::string(c) + "/cgroup.procs").c_str(), W_OK) != 0)
      return std::string("no writable cgroup v1 ") + c + " controller at /sys/fs/cgroup/" + c;
  return "";
}

// This process's cgroup in `controller` ("": cgroup2), "" for the root (the agents it
// starts share it).
std::string own_path(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (controller.empty() && line.rfind("0::", 0) == 0) return line.substr(3) == "/" ? "" : line.substr(3);
    std::stringstream cs(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == controller) return line.substr(b + 1) == "/" ? "" : line.substr(b + 1);
  }
  return "";
}

class ClusterIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
    start({"--isolation", "cgroup1"});
  }
  // Stand-in cards, and the scheduler and agent n1 with `isolation` flags.
  void start(const std::vector<std::string>& isolation) {
    subtree_ = "tessel-it-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    dev_ = c.root() + "/dev";
    fs::create_directories(dev_ + "/accel");
    for (int n = 0; n < 8; ++n) {
      ASSERT_EQ(::mknod((dev_ + "/accel/accel" + std::to_string(n)).c_str(), S_IFCHR | 0666, makedev(240, n)), 0);
      ASSERT_EQ(
          ::mknod((dev_ + "/accel/accel_controlD" + std::to_string(n)).c_str(), S_IFCHR | 0666, makedev(240, 64 + n)),
          0);
    }
    c.agent_args = isolation;
    c.agent_args.insert(c.agent_args.end(), {"--cgroup-subtree", subtree_, "--dev-root", dev_});
    c.start_scheduler();
    c.start_agent("n1");
    ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  }
  void TearDown() override {
    if (subtree_.empty()) return;
    std::vector<std::string> dirs;
    for (const char* ctl : kControllers) dirs.push_back(controller_dir(ctl));
    dirs.push_back(kUnified + own_path("") + "/" + subtree_);
    for (const std::string& dir : dirs) {  // The agent's subtree (its tasks' cgroups are gone by now).
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory()) ::rmdir(e.path().c_str());
      ::rmdir(dir.c_str());
    }
  }
  std::string controller_dir(const std::string& controller) const {
    return "/sys/fs/cgroup/" + controller + own_path(controller) + "/" + subtree_;
  }
  std::string task_cgroup(const std::string& controller, const std::string& job) const {
    return controller_dir(controller) + "/" + job + ".0.0";
  }
  std::string cards_script() const {
    const std::string accel = dev_ + "/accel/";
    return "mine=$HABANA_VISIBLE_DEVICES; other=$(( (mine + 1) % 8 ));"
           "echo \"mine: $( (: < " +
           accel +
           "accel$mine) 2>&1 )\";"
           "echo \"mine control: $( (: < " +
           accel +
           "accel_controlD$mine) 2>&1 )\";"
           "echo \"other: $( (: < " +
           accel +
           "accel$other) 2>&1 )\";"
           "echo \"other control: $( (: < " +
           accel +
           "accel_controlD$other) 2>&1 )\";"
           "echo x > /dev/null && head -c 4 /dev/urandom > /dev/null && echo standard: ok";
  }
  // What cards_script() printed: own cards ENXIO (allowed), others EPERM (refused).
  void expect_own_cards_only(const std::string& log) {
    std::istringstream lines(log);
    std::string line;
    int seen = 0;
    while (std::getline(lines, line)) {
      if (line.rfind("mine", 0) == 0) {
        EXPECT_NE(line.find("No such device or address"), std::string::npos) << line;  // ENXIO: allowed.
        ++seen;
      } else if (line.rfind("other", 0) == 0) {
        EXPECT_NE(line.find("Operation not permitted"), std::string::npos) << line;  // EPERM: refused.
        ++seen;
      }
    }
    EXPECT_EQ(seen, 4) << log;
    EXPECT_NE(log.find("standard: ok"), std::string::npos) << log;
  }
  static inline const std::string kUnified = "/sys/fs/cgroup/unified";
  json finished(const json& spec) {
    const json job = c.submit(spec);
    auto done = c.wait_job(job.value("id", ""), {"succeeded", "failed"}, 30s);
    EXPECT_TRUE(done);
    return done ? *done : json::object();
  }

  Cluster c;
  std::string subtree_, dev_;
  static inline int counter_ = 0;
};

TEST_F(ClusterIsolation, ROOT_ATaskOpensItsOwnCardsOnlyAndStandardDevicesStillWork) {
  const json done = finished({{"command", {"/bin/sh", "-c", cards_script()}}, {"devices", 1}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  expect_own_cards_only(c.log("n1", done["id"]));
}

TEST_F(ClusterIsolation, ROOT_ATaskOverItsMemoryLimitFailsSayingSo) {
  const json done =
      finished({{"command", {"python3", "-c", "b = bytearray(512 << 20); print(len(b))"}}, {"memory_mib", 64}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_EQ(done.value("reason", ""), "out of memory: rank 0 killed at its 64 MiB limit") << done.dump();
}

TEST_F(ClusterIsolation, ROOT_WhatADoubleForkLeftBehindDiesWithTheTaskAndItsCgroupGoes) {
  // The daemon: its own session, reparented away from the task's ranks.
  const std::string script =
      "setsid sh -c 'sleep 300 & echo $! > daemon.pid' < /dev/null > /dev/null 2>&1; "
      "while [ ! -s daemon.pid ]; do :; done; cat /proc/$(cat daemon.pid)/cgroup | grep pids";
  const json done = finished({{"command", {"/bin/sh", "-c", script}}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  const std::string id = done["id"];
  EXPECT_NE(c.log("n1", id).find(subtree_ + "/" + id + ".0.0"), std::string::npos) << c.log("n1", id);
  const int daemon = std::stoi(tessel::testkit::read_file(c.work_dir("n1", id) + "/daemon.pid"));
  EXPECT_TRUE(eventually([&] { return !pid_alive(daemon); }, 10s)) << "the daemon " << daemon << " is still alive";
  EXPECT_TRUE(eventually([&] { return !fs::exists(task_cgroup("pids", id)); }, 10s));
  // The task's use came back with its result.
  const json result = json::parse(tessel::testkit::read_file(c.task_dir("n1", id) + "/result.json"));
  EXPECT_TRUE(result.contains("cpu_seconds")) << result.dump();
  EXPECT_GT(result.value("max_rss_mib", 0), 0) << result.dump();
}

TEST_F(ClusterIsolation, ROOT_NprocInATaskIsItsCpus) {
  const json done = finished({{"command", {"nproc"}}, {"cpus", 1}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_EQ(c.log("n1", done["id"]), "1\n");
  const json node = c.get("/v1/nodes/n1");
  EXPECT_EQ(node["inventory"].value("isolation", ""), "cgroup1") << node.dump();
  EXPECT_EQ(node["inventory"].value("cpus", 0), static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))) << node.dump();
  EXPECT_GT(node["inventory"].value("memory_mib", 0), 0) << node.dump();
}

TEST_F(ClusterIsolation, ROOT_OneRankPerCardIsPinnedToItsShareOfTheTasksCpus) {
  const json done = finished({{"command", {"/bin/sh", "-c", "nproc; grep Cpus_allowed_list /proc/self/status"}},
                              {"devices", 2},
                              {"tasks_per_node", "device"},
                              {"cpus", 2}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  const std::string rank0 = c.log("n1", done["id"], 0, 0), rank1 = c.log("n1", done["id"], 0, 1);
  EXPECT_EQ(rank0.substr(0, 2), "1\n") << rank0;
  EXPECT_EQ(rank1.substr(0, 2), "1\n") << rank1;
  EXPECT_NE(rank0, rank1);  // Different CPUs.
}

TEST_F(ClusterIsolation, ROOT_ARestartedAgentLeavesARunningTasksCgroupAlone) {
  const std::string go = c.root() + "/go";
  const json job =
      c.submit({{"command", {"/bin/sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done; nproc"}}, {"cpus", 1}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  const std::string procs = task_cgroup("freezer", id) + "/cgroup.procs";
  ASSERT_TRUE(eventually([&] { return !tessel::testkit::read_file(procs).empty(); }));
  c.kill_agent("n1");
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  EXPECT_FALSE(tessel::testkit::read_file(procs).empty()) << "the restarted agent cleared a running task's cgroup";
  tessel::testkit::write_file(go, "");
  auto done = c.wait_job(id, {"succeeded", "failed"}, 30s);
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  EXPECT_EQ(c.log("n1", id), "1\n");
  EXPECT_TRUE(eventually([&] { return !fs::exists(task_cgroup("freezer", id)); }, 10s));
}

TEST_F(ClusterIsolation, ROOT_ATaskWhoseSupervisorDiedIsClearedByTheNextAgent) {
  const json job = c.submit({{"command", {"/bin/sh", "-c", "echo $$ > rank.pid; exec sleep 300"}}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  const std::string pid_file = c.work_dir("n1", id) + "/rank.pid";
  ASSERT_TRUE(eventually([&] { return fs::exists(pid_file) && !tessel::testkit::read_file(pid_file).empty(); }));
  const int rank = std::stoi(tessel::testkit::read_file(pid_file));
  const json sup = json::parse(tessel::testkit::read_file(c.task_dir("n1", id) + "/supervisor.json"));
  c.kill_agent("n1");
  ASSERT_EQ(::kill(sup["pid"].get<int>(), SIGKILL), 0);  // Its rank lives on, alone in the task's cgroup.
  ASSERT_TRUE(pid_alive(rank));
  c.start_agent("n1");
  EXPECT_TRUE(eventually([&] { return !pid_alive(rank); }, 10s)) << "the rank outlived its cleared cgroup";
  EXPECT_FALSE(fs::exists(task_cgroup("freezer", id)));
  auto done = c.wait_job(id, {"failed"});
  ASSERT_TRUE(done);
}

TEST_F(ClusterIsolation, ROOT_ATaskWhoseSupervisorDiesIsClearedByItsAgent) {
  const json job = c.submit({{"command", {"/bin/sh", "-c", "echo $$ > rank.pid; exec sleep 300"}}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  const std::string pid_file = c.work_dir("n1", id) + "/rank.pid";
  ASSERT_TRUE(eventually([&] { return fs::exists(pid_file) && !tessel::testkit::read_file(pid_file).empty(); }));
  const int rank = std::stoi(tessel::testkit::read_file(pid_file));
  const json sup = json::parse(tessel::testkit::read_file(c.task_dir("n1", id) + "/supervisor.json"));
  ASSERT_EQ(::kill(sup["pid"].get<int>(), SIGKILL), 0);
  auto done = c.wait_job(id, {"failed"});
  ASSERT_TRUE(done);
  EXPECT_FALSE(pid_alive(rank)) << "the job ended with its rank still running";
  EXPECT_FALSE(fs::exists(task_cgroup("freezer", id)));
}

TEST_F(ClusterIsolation, ROOT_ACancelledTasksDaemonGetsItsGraceThenNothingIsLeft) {
  // A daemon in a session of its own that notes SIGTERM and lives on; the rank waits.
  const std::string script =
      "setsid sh -c 'trap \"echo term > daemon.term\" TERM; echo $$ > daemon.pid; "
      "while :; do sleep 0.05; done' < /dev/null > /dev/null 2>&1 & "
      "while [ ! -s daemon.pid ]; do sleep 0.01; done; exec sleep 300";
  const json job = c.submit({{"command", {"/bin/sh", "-c", script}}, {"kill_grace_s", 1}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}));
  const std::string pid_file = c.work_dir("n1", id) + "/daemon.pid";
  ASSERT_TRUE(eventually([&] { return fs::exists(pid_file) && !tessel::testkit::read_file(pid_file).empty(); }));
  const int daemon = std::stoi(tessel::testkit::read_file(pid_file));
  EXPECT_EQ(c.post("/v1/jobs/" + id + "/cancel", json::object()) / 100, 2);
  ASSERT_TRUE(c.wait_job(id, {"cancelled"}));
  EXPECT_TRUE(eventually([&] { return !pid_alive(daemon); }, 10s)) << "the daemon outlived its task";
  EXPECT_EQ(tessel::testkit::read_file(c.work_dir("n1", id) + "/daemon.term"), "term\n");
  EXPECT_TRUE(eventually([&] { return !fs::exists(task_cgroup("freezer", id)); }, 10s));
}

class ClusterIsolationPids : public ClusterIsolation {
 protected:
  void SetUp() override {
    if (std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
    start({"--isolation", "cgroup1", "--task-pids-max", "8"});
  }
};

TEST_F(ClusterIsolationPids, ROOT_ATaskCannotForkPastItsPidsLimit) {
  const json done =
      finished({{"command", {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 2 & done"}}});
  const std::string log = c.log("n1", done.value("id", ""));
  EXPECT_NE(log.find("fork"), std::string::npos) << done.dump() << "\n" << log;
  EXPECT_EQ(tessel::testkit::read_file(task_cgroup("pids", done.value("id", "")) + "/pids.max"), "");  // Gone.
}

// cgroup2 on this machine: the hybrid hierarchy's cgroup2 mount has no controllers (they
// are bound to v1), but a task's cgroup there still holds the device program, and
// cgroup.kill empties it.
class ClusterIsolationV2 : public ClusterIsolation {
 protected:
  void SetUp() override {
    if (std::string why = why_not_here(); !why.empty()) GTEST_SKIP() << why;
    if (!fs::exists(kUnified + "/cgroup.controllers")) GTEST_SKIP() << "no cgroup2 mount at " << kUnified;
    start({"--isolation", "cgroup2", "--cgroup-root", kUnified});
  }
};

TEST_F(ClusterIsolationV2, ROOT_TheDeviceProgramRefusesOtherCardsAndLeftoversDie) {
  const std::string script = cards_script() +
                             "; setsid sh -c 'sleep 300 & echo $! > daemon.pid' < /dev/null > /dev/null "
                             "2>&1; while [ ! -s daemon.pid ]; do :; done";
  const json done = finished({{"command", {"/bin/sh", "-c", script}}, {"devices", 1}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  const std::string id = done["id"];
  expect_own_cards_only(c.log("n1", id));
  const int daemon = std::stoi(tessel::testkit::read_file(c.work_dir("n1", id) + "/daemon.pid"));
  EXPECT_TRUE(eventually([&] { return !pid_alive(daemon); }, 10s)) << "the daemon " << daemon << " is still alive";
  EXPECT_FALSE(fs::exists(kUnified + own_path("") + "/" + subtree_ + "/" + id + ".0.0"));
  const json node = c.get("/v1/nodes/n1");
  EXPECT_EQ(node["inventory"].value("isolation", ""), "cgroup2") << node.dump();
}

}  // namespace

TEST(ClusterIsolationFlags, AnAgentThatCannotMakeCgroupsRefusesToStartInOneLine) {
  tessel::testkit::TempDir dir;
  std::vector<std::string> argv = {TESSEL_AGENT_BIN,
                                   "--scheduler",
                                   "http://127.0.0.1:9",
                                   "--node",
                                   "n1",
                                   "--state-dir",
                                   dir.str("state"),
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--isolation",
                                   "cgroup1",
                                   "--cgroup-root",
                                   dir.str("no-cgroups"),
                                   "--vendor",
                                   "habana",
                                   "--hl-smi",
                                   FAKE_HL_SMI_BIN};
  if (::geteuid() == 0) argv.insert(argv.end(), {"--run-as", "root"});
  auto o = tessel::testkit::command(argv);
  o.stderr_path = dir.str("agent.err");
  tessel::testkit::Child agent(std::move(o));
  const int status = agent.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string err = tessel::testkit::read_file(dir.str("agent.err"));
  EXPECT_NE(err.find("tessel-agent: task isolation: cgroup v1 controller cpuset is not mounted at " +
                     dir.str("no-cgroups") + "/cpuset (--isolation none starts without it)\n"),
            std::string::npos)
      << err;
}
