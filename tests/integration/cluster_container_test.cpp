// Issue 29 with a real podman: the real scheduler and agent run jobs in an image built
// here from busybox-static (podman import, no registry), with stand-in cards (character
// devices of major 240, no driver: an allowed open answers ENXIO) under a temp
// --dev-root. Root only (ROOT_), and only where podman can run a container at all:
// skipped with the reason otherwise (scripts/setup.sh installs podman, runc and
// busybox-static, so CI runs them).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Runs argv (no shell), output to `out`; its exit status (-1: could not run it).
int run(const std::vector<std::string>& argv, std::string* out = nullptr) {
  char tmpl[] = "/tmp/tessel-podman-out-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out) *out = tessel::testkit::read_file(tmpl);
  ::unlink(tmpl);
  return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The OCI runtime the agent chooses here (--container-runtime auto): crun on a pure
// cgroup v2 host, runc on v1 or hybrid ones.
const std::string kRuntime = fs::exists("/sys/fs/cgroup/cgroup.controllers") ? "crun" : "runc";
const std::vector<std::string> kPodman = {"podman",   "--runtime",        kRuntime, "--cgroup-manager",
                                          "cgroupfs", "--events-backend", "file"};

std::vector<std::string> podman(std::vector<std::string> args) {
  std::vector<std::string> a = kPodman;
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

const std::string kImage = "localhost/tessel-it-" + std::to_string(::getpid()) + ":1";

// Builds kImage from /bin/busybox (busybox-static) once for the test binary: "" when
// done, else why this machine cannot run the tests.
std::string build_image() {
  if (::geteuid() != 0) return "needs root (podman as root, device nodes)";
  std::string out;
  if (run({"podman", "--version"}, &out) != 0) return "podman is not installed (scripts/setup.sh installs it): " + out;
  if (!fs::exists("/bin/busybox")) return "busybox-static is not installed (scripts/setup.sh installs it)";
  const std::string dir = "/tmp/tessel-it-image-" + std::to_string(::getpid());
  fs::create_directories(dir + "/rootfs/bin");
  fs::copy_file("/bin/busybox", dir + "/rootfs/bin/busybox", fs::copy_options::overwrite_existing);
  if (run({"/bin/busybox", "--list"}, &out) != 0) return "busybox --list failed: " + out;
  std::istringstream applets(out);
  for (std::string a; std::getline(applets, a);)
    if (!a.empty() && a != "busybox") fs::create_symlink("busybox", dir + "/rootfs/bin/" + a);
  for (const char* d : {"tmp", "etc", "dev", "proc", "sys"}) fs::create_directories(dir + "/rootfs/" + d);
  tessel::testkit::write_file(dir + "/rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  if (run({"tar", "-C", dir + "/rootfs", "-cf", dir + "/rootfs.tar", "."}, &out) != 0) return "tar: " + out;
  if (run(podman({"import", "--quiet", dir + "/rootfs.tar", kImage}), &out) != 0) return "podman import: " + out;
  fs::remove_all(dir);
  if (run(podman({"run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                  "--network", "host", kImage, "true"}),
          &out) != 0)
    return "podman cannot run a container here: " + out;
  return "";
}

class ClusterContainer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { why_not_ = new std::string(build_image()); }
  static void TearDownTestSuite() {
    if (why_not_ && why_not_->empty()) run(podman({"rmi", "--force", kImage}));
    delete why_not_;
    why_not_ = nullptr;
  }
  void SetUp() override {
    if (!why_not_->empty()) GTEST_SKIP() << *why_not_;
    dev_ = c.root() + "/dev";
    allowed_ = c.root() + "/data";
    fs::create_directories(dev_ + "/accel");
    fs::create_directories(allowed_ + "/set1");
    tessel::testkit::write_file(allowed_ + "/set1/hello.txt", "hello from the node\n");
    for (int n = 0; n < 8; ++n) {
      ASSERT_EQ(::mknod((dev_ + "/accel/accel" + std::to_string(n)).c_str(), S_IFCHR | 0666, makedev(240, n)), 0);
      ASSERT_EQ(
          ::mknod((dev_ + "/accel/accel_controlD" + std::to_string(n)).c_str(), S_IFCHR | 0666, makedev(240, 64 + n)),
          0);
    }
    c.agent_args = {"--dev-root", dev_, "--run-as", "nobody", "--allow-mount", allowed_, "--container-runtime", "auto"};
    const auto more = isolation_flags();
    c.agent_args.insert(c.agent_args.end(), more.begin(), more.end());
    c.start_scheduler();
    c.start_agent("n1");
    ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  }
  // The agents' --isolation flags: none here; cgroup1 in ClusterContainerIsolated.
  virtual std::vector<std::string> isolation_flags() { return {"--isolation", "none"}; }
  json finished(const json& spec) {
    const json job = c.submit(spec);
    auto done = c.wait_job(job.value("id", ""), {"succeeded", "failed", "cancelled"}, 60s);
    EXPECT_TRUE(done) << job.dump();
    return done ? *done : json::object();
  }
  // The containers of the job's task on n1 (named in its launch.json) podman still has.
  std::string containers_of(const std::string& job) const {
    std::string left;
    const std::string text = tessel::testkit::read_file(c.task_dir("n1", job) + "/launch.json");
    const json plan = json::parse(text.empty() ? "{}" : text);
    if (!plan.contains("container")) return "<no launch.json naming containers>";
    for (const auto& name : plan["container"]["names"])
      if (run(podman({"container", "exists", name.get<std::string>()})) == 0) left += name.get<std::string>() + " ";
    return left;
  }

  Cluster c;
  std::string dev_, allowed_;
  static inline std::string* why_not_ = nullptr;
};

TEST_F(ClusterContainer, ROOT_AJobInAnImageSeesOnlyItsCardsItsVariablesAndRunsAsItsUser) {
  const std::string script =
      "ls /dev/accel | tr '\\n' ' '; echo; "
      "echo \"open: $( (: < /dev/accel/accel${HABANA_VISIBLE_DEVICES%%,*}) 2>&1 )\"; "
      "echo \"id: $(id -u):$(id -g)\"; echo \"pwd: $(pwd)\"; "
      "echo \"visible: $HABANA_VISIBLE_MODULES\"; echo \"job: $TESSEL_JOB_ID foo: $FOO\"; "
      "echo \"master: $MASTER_ADDR:$MASTER_PORT\"; echo \"path: $PATH\"; "
      "echo x > /dev/null && echo standard: ok";
  const json done =
      finished({{"command", {"sh", "-c", script}}, {"devices", 2}, {"image", kImage}, {"env", {{"FOO", "bar baz"}}}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  const std::string id = done["id"];
  const std::string log = c.log("n1", id);
  const auto& indices = done["allocations"][0]["indices"];
  ASSERT_EQ(indices.size(), 2U) << done.dump();
  std::vector<int> own = {indices[0].get<int>(), indices[1].get<int>()};
  std::sort(own.begin(), own.end());
  std::string want;
  for (int i : own) want += "accel" + std::to_string(i) + " ";
  for (int i : own) want += "accel_controlD" + std::to_string(i) + " ";
  EXPECT_EQ(log.substr(0, log.find('\n')), want) << log;  // Only its own cards' nodes.
  EXPECT_NE(log.find("open: "), std::string::npos);
  EXPECT_NE(log.find("No such device or address"), std::string::npos) << log;  // ENXIO: allowed.
  EXPECT_NE(log.find("id: 65534:65534\n"), std::string::npos) << log;          // --run-as nobody.
  EXPECT_NE(log.find("pwd: " + c.work_dir("n1", id) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("job: " + id + " foo: bar baz\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("visible: \n"), std::string::npos) << log;
  EXPECT_EQ(log.find("master: :"), std::string::npos) << log;
  EXPECT_EQ(log.find("path: \n"), std::string::npos) << log;  // The image's PATH.
  EXPECT_NE(log.find("standard: ok"), std::string::npos) << log;
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 10s)) << containers_of(id);
  const json node = c.get("/v1/nodes/n1");
  EXPECT_EQ(node["inventory"].value("containers", "").rfind("podman ", 0), 0U) << node.dump();
  EXPECT_NE(node["inventory"].value("containers", "").find(", " + kRuntime), std::string::npos) << node.dump();
}

TEST_F(ClusterContainer, ROOT_TheExitCodeOfTheJobInTheContainerIsTheJobs) {
  const json done = finished({{"command", {"sh", "-c", "echo out; echo err >&2; exit 7"}}, {"image", kImage}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_EQ(done.value("exit_code", 0), 7) << done.dump();
  const std::string log = c.log("n1", done["id"]);
  EXPECT_NE(log.find("out\n"), std::string::npos) << log;
  EXPECT_NE(log.find("err\n"), std::string::npos) << log;
}

TEST_F(ClusterContainer, ROOT_ACancelStopsTheContainerAndRemovesIt) {
  const json job = c.submit({{"command", {"sh", "-c", "echo started; exec sleep 300"}}, {"image", kImage}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}, 60s));
  ASSERT_TRUE(eventually([&] { return c.log("n1", id).find("started") != std::string::npos; }, 30s));
  EXPECT_FALSE(containers_of(id).empty());
  EXPECT_EQ(c.post("/v1/jobs/" + id + "/cancel", json::object()) / 100, 2);
  const auto done = c.wait_job(id, {"cancelled"}, 60s);
  ASSERT_TRUE(done);
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 30s)) << containers_of(id);
}

TEST_F(ClusterContainer, ROOT_AMissingImageFailsTheJobNamingTheImage) {
  const std::string missing = "localhost/tessel-no-such-image-" + std::to_string(::getpid()) + ":1";
  const json done = finished({{"command", {"true"}}, {"image", missing}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_NE(done.value("reason", "").find("pulling image " + missing + ": "), std::string::npos) << done.dump();
}

TEST_F(ClusterContainer, ROOT_ImagePullAlwaysPullsEvenWhenTheNodeHasTheImage) {
  // The image exists here, but only as an import: a pull asks a registry, and none is
  // reachable, so the job fails on the pull, which proves it was asked for.
  const json done = finished({{"command", {"true"}}, {"image", kImage}, {"image_pull", "always"}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_NE(done.value("reason", "").find("pulling image " + kImage + ": "), std::string::npos) << done.dump();
  EXPECT_EQ(c.log("n1", done["id"]), "tessel: pulling image " + kImage + " on n1\n");  // What `tessel logs` shows.
  const json cached = finished({{"command", {"true"}}, {"image", kImage}});            // missing: no pull.
  EXPECT_EQ(cached.value("state", ""), "succeeded") << cached.dump();
}

// A slow pull: n2's podman is a wrapper whose `pull` waits (at most 60 s) for a file the
// test writes, then succeeds without pulling (the image is here already). Meanwhile the
// job (running: its agent launched the task) has the pull as its reason and one event;
// the ranks' start clears it.
TEST_F(ClusterContainer, ROOT_WhileTheImageIsPulledTheJobSaysSoAndGetsOneEvent) {
  const std::string go = c.root() + "/pull-go", wrapper = c.root() + "/slow-podman";
  const std::string wait_for_go = "i=0; while [ ! -e " + go + " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done";
  tessel::testkit::write_file(wrapper, "#!/bin/sh\ncase \" $* \" in *\" pull --quiet \"*) " + wait_for_go +
                                           "; exit 0 ;;\nesac\nexec podman \"$@\"\n");
  ASSERT_EQ(::chmod(wrapper.c_str(), 0755), 0);
  c.agent_args.insert(c.agent_args.end(), {"--podman", wrapper});
  c.start_agent("n2");
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  const json job =
      c.submit({{"command", {"echo", "ran"}}, {"image", kImage}, {"image_pull", "always"}, {"nodelist", {"n2"}}});
  const std::string id = job["id"];
  const std::string reason = "pulling image " + kImage + " on n2";
  const auto pulling = c.wait_reason(id, reason, 60s);
  ASSERT_TRUE(pulling);
  EXPECT_EQ(pulling->value("state", ""), "running") << pulling->dump();
  EXPECT_EQ(pulling->value("reason", ""), reason) << pulling->dump();
  auto events_named = [&](const std::string& name) {
    std::vector<json> out;
    const json history = c.get("/v1/jobs/" + id + "/events");
    for (const auto& e : history["events"])
      if (e.value("event", "") == name) out.push_back(e);
    return out;
  };
  ASSERT_EQ(events_named("pulling_image").size(), 1U) << c.get("/v1/jobs/" + id + "/events").dump();
  EXPECT_EQ(events_named("pulling_image")[0].value("reason", ""), reason);
  EXPECT_EQ(events_named("pulling_image")[0]["nodes"], json::array({"n2"}));
  tessel::testkit::write_file(go, "");
  const auto done = c.wait_job(id, {"succeeded", "failed"}, 60s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->value("state", ""), "succeeded") << done->dump();
  EXPECT_EQ(done->value("reason", ""), "") << done->dump();
  EXPECT_EQ(events_named("pulling_image").size(), 1U);
  std::vector<std::string> order;
  const json history = c.get("/v1/jobs/" + id + "/events");
  for (const auto& e : history["events"]) order.push_back(e.value("event", ""));
  EXPECT_EQ(order, (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image", "succeeded"}));
  EXPECT_EQ(c.log("n2", id), "tessel: pulling image " + kImage + " on n2\nran\n");
}

TEST_F(ClusterContainer, ROOT_MountsComeOnlyFromAllowedDirectories) {
  const json ok = finished({{"command", {"sh", "-c", "cat /data/hello.txt; echo more > /data/new 2>&1 || echo ro"}},
                            {"image", kImage},
                            {"mounts", {{{"source", allowed_ + "/set1"}, {"target", "/data"}, {"read_only", true}}}}});
  ASSERT_EQ(ok.value("state", ""), "succeeded") << ok.dump();
  const std::string log = c.log("n1", ok["id"]);
  EXPECT_NE(log.find("hello from the node\n"), std::string::npos) << log;
  EXPECT_NE(log.find("ro\n"), std::string::npos) << log;  // Read-only.
  EXPECT_FALSE(fs::exists(allowed_ + "/set1/new"));

  fs::create_symlink("/etc", allowed_ + "/escape");  // A link out of the allowed directory.
  for (const std::string& source : {std::string("/etc"), allowed_ + "/escape", allowed_ + "/../"}) {
    const json bad =
        finished({{"command", {"true"}},
                  {"image", kImage},
                  {"mounts", {{{"source", source == allowed_ + "/../" ? c.root() : source}, {"target", "/host"}}}}});
    EXPECT_EQ(bad.value("state", ""), "failed") << bad.dump();
    EXPECT_NE(bad.value("reason", "").find("is not under a directory this node allows"), std::string::npos)
        << bad.dump();
  }
}

TEST_F(ClusterContainer, ROOT_TheRanksOfATwoNodeGangReachEachOtherThroughMasterAddrFromTheirContainers) {
  c.start_agent("n2");
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  // Rank 0 listens on MASTER_PORT and adds what rank 1 sends to its own share; rank 1
  // connects to MASTER_ADDR:MASTER_PORT (retrying until rank 0 listens, at most 10 s).
  const std::string script =
      "if [ \"$RANK\" = 0 ]; then got=$(nc -l -p $MASTER_PORT < /dev/null); echo \"sum: $((4 + got))\"; "
      "else for i in $(seq 100); do echo 3 | nc $MASTER_ADDR $MASTER_PORT 2>/dev/null && exit 0; sleep 0.1; done; "
      "exit 1; fi";
  const json done = finished({{"command", {"sh", "-c", script}}, {"nodes", 2}, {"image", kImage}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  std::string rank0;
  for (const auto& a : done["allocations"])
    if (a.value("rank", -1) == 0) rank0 = c.log(a.value("node", ""), done["id"], 0);
  EXPECT_EQ(rank0, "sum: 7\n");
}

TEST_F(ClusterContainer, ROOT_AContainerTaskOutlivesAnAgentRestartAndEndsWell) {
  // The job waits for a file in its workdir (the per-task one, bind-mounted).
  const json job = c.submit(
      {{"command", {"sh", "-c", "echo up; while [ ! -e go ]; do sleep 0.05; done; echo done"}}, {"image", kImage}});
  const std::string id = job["id"];
  ASSERT_TRUE(c.wait_job(id, {"running"}, 60s));
  ASSERT_TRUE(eventually([&] { return c.log("n1", id).find("up\n") != std::string::npos; }, 30s));
  c.kill_agent("n1", SIGKILL);
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  tessel::testkit::write_file(c.work_dir("n1", id) + "/go", "");
  const auto done = c.wait_job(id, {"succeeded", "failed"}, 60s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->value("state", ""), "succeeded") << done->dump();
  EXPECT_EQ(c.log("n1", id), "up\ndone\n");
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 30s)) << containers_of(id);
}

TEST_F(ClusterContainer, ROOT_ATimeLimitStopsTheContainer) {
  const json done =
      finished({{"command", {"sleep", "300"}}, {"image", kImage}, {"time_limit_s", 2}, {"kill_grace_s", 20}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  // As for a bare task, the supervisor's result says why; 143: the SIGTERM reached the
  // job inside (through podman and catatonit) before the grace ran out.
  EXPECT_NE(tessel::testkit::read_file(c.task_dir("n1", done["id"]) + "/result.json").find("time limit"),
            std::string::npos);
  EXPECT_EQ(done.value("exit_code", 0), 143) << done.dump();
  EXPECT_TRUE(eventually([&] { return containers_of(done["id"]).empty(); }, 30s));
}

// An agent whose operator grants every container CAP_SYS_NICE (as Intel runs Gaudi
// containers): the job's process, not root, has it in effect; without the flag it has
// no capability at all.
class ClusterContainerCaps : public ClusterContainer {
 protected:
  std::vector<std::string> isolation_flags() override {
    return {"--isolation", "none", "--container-cap-add", "SYS_NICE"};
  }
};

TEST_F(ClusterContainerCaps, ROOT_TheNodesCapabilityReachesTheJobsUserInItsContainer) {
  const json done = finished({{"command", {"sh", "-c", "id -u; grep CapEff /proc/self/status"}}, {"image", kImage}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_EQ(c.log("n1", done["id"]), "65534\nCapEff:\t0000000000800000\n");  // Bit 23: CAP_SYS_NICE.
}

TEST_F(ClusterContainer, ROOT_AJobsUserHasNoCapabilityByDefault) {
  const json done = finished({{"command", {"grep", "CapEff", "/proc/self/status"}}, {"image", kImage}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  EXPECT_EQ(c.log("n1", done["id"]), "CapEff:\t0000000000000000\n");
}

// The same agent fencing tasks in cgroups on this machine's v1 hierarchy (issue 28):
// podman runs in the task's cgroup, the container gets the task's CPUs.
class ClusterContainerIsolated : public ClusterContainer {
 protected:
  std::vector<std::string> isolation_flags() override {
    subtree_ = "tessel-it-podman-" + std::to_string(::getpid());
    return {"--isolation", "cgroup1", "--cgroup-subtree", subtree_};
  }
  void SetUp() override {
    for (const char* ctl : {"cpuset", "memory", "devices", "pids", "cpuacct", "freezer"})
      if (::access(("/sys/fs/cgroup/" + std::string(ctl) + "/cgroup.procs").c_str(), W_OK) != 0)
        GTEST_SKIP() << "no writable cgroup v1 " << ctl << " controller";
    ClusterContainer::SetUp();
  }
  void TearDown() override {  // The agent's subtree (its tasks' cgroups are gone by now).
    if (subtree_.empty()) return;
    for (const char* ctl : {"cpuset", "memory", "devices", "pids", "cpuacct", "freezer"}) {
      const std::string dir = "/sys/fs/cgroup/" + std::string(ctl) + own_path(ctl) + "/" + subtree_;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory()) ::rmdir(e.path().c_str());
      ::rmdir(dir.c_str());
    }
    // The containers' level runc made where the task has no directory (the agent's
    // cgroup there, as ours): empty unless another agent's container runs (then kept).
    for (const auto& [mount, name] :
         {std::pair{"cpu", "cpu"}, std::pair{"blkio", "blkio"}, std::pair{"devices", "devices"},
          std::pair{"systemd", "name=systemd"}, std::pair{"unified", ""}})
      ::rmdir(("/sys/fs/cgroup/" + std::string(mount) + own_path(name) + "/tessel-containers").c_str());
  }
  // This process's cgroup in a v1 `controller` ("" for the root), as its agents inherit it.
  static std::string own_path(const std::string& controller) {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      std::stringstream cs(line.substr(a + 1, b - a - 1));
      for (std::string name; std::getline(cs, name, ',');)
        if (name == controller) return line.substr(b + 1) == "/" ? "" : line.substr(b + 1);
    }
    return "";
  }
  std::string subtree_;
};

TEST_F(ClusterContainerIsolated, ROOT_TheContainerGetsTheTasksCpusAndMemoryLimit) {
  const json done = finished({{"command", {"sh", "-c", "nproc; cat /proc/self/cgroup | grep memory"}},
                              {"image", kImage},
                              {"cpus", 1},
                              {"memory_mib", 256}});
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump();
  const std::string log = c.log("n1", done["id"]);
  EXPECT_EQ(log.substr(0, 2), "1\n") << log;
  const json node = c.get("/v1/nodes/n1");
  EXPECT_EQ(node["inventory"].value("isolation", ""), "cgroup1") << node.dump();
}

// The container runs below the task's cgroup (tessel-containers/libpod-ID in each of
// its v1 hierarchies): the task's CPU seconds and peak memory are the container's too.
TEST_F(ClusterContainerIsolated, ROOT_TheTasksUseCountsTheContainer) {
  const json done = finished({{"command",
                               {"sh", "-c",
                                "cat /proc/self/cgroup | grep memory; i=0; while [ $i -lt 1200000 ]; do i=$((i+1)); "
                                "done; dd if=/dev/zero of=/dev/null bs=128M count=1 2>/dev/null"}},
                              {"image", kImage},
                              {"memory_mib", 512}});
  const std::string log = c.log("n1", done.value("id", ""));
  ASSERT_EQ(done.value("state", ""), "succeeded") << done.dump() << log;
  EXPECT_NE(log.find("/" + subtree_ + "/"), std::string::npos) << log;  // Below the task's.
  EXPECT_NE(log.find("/tessel-containers/libpod-"), std::string::npos) << log;
  ASSERT_TRUE(done.contains("cpu_seconds")) << done.dump();
  RecordProperty("cpu_seconds", std::to_string(done["cpu_seconds"].get<double>()));
  RecordProperty("max_rss_mib", std::to_string(done.value("max_rss_mib", int64_t{0})));
  EXPECT_GE(done["cpu_seconds"].get<double>(), 0.7) << done.dump();  // The loop's, not podman's alone.
  ASSERT_TRUE(done.contains("max_rss_mib")) << done.dump();
  EXPECT_GE(done["max_rss_mib"].get<int64_t>(), 128) << done.dump();  // dd's buffer.
  EXPECT_LE(done["max_rss_mib"].get<int64_t>(), 512) << done.dump();
}

// A container that allocates past the task's memory limit is killed by the kernel and
// the job fails with the out-of-memory reason of a bare task. dd's buffer (256 MiB, one
// block) is memory it touches at once, so the kill comes in well under a second.
TEST_F(ClusterContainerIsolated, ROOT_AContainerPastItsMemoryLimitFailsOutOfMemory) {
  const json done = finished({{"command", {"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"}},
                              {"image", kImage},
                              {"memory_mib", 64}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_EQ(done.value("reason", ""), "out of memory: rank 0 killed at its 64 MiB limit")
      << done.dump() << c.log("n1", done.value("id", ""));
  EXPECT_EQ(done.value("exit_code", 0), 137) << done.dump();
  EXPECT_TRUE(eventually([&] { return containers_of(done["id"]).empty(); }, 30s));
  // conmon, which saw the kill, wrote its `oom` marker in its own working directory:
  // the task's, not the job's.
  EXPECT_FALSE(fs::exists(c.work_dir("n1", done.value("id", "")) + "/oom"));
}

// A job workdir that is not there fails the start, naming it (podman works elsewhere).
TEST_F(ClusterContainer, ROOT_AMissingWorkdirFailsTheStartNamingIt) {
  const json done = finished({{"command", {"true"}}, {"image", kImage}, {"workdir", c.root() + "/nowhere"}});
  EXPECT_EQ(done.value("state", ""), "failed") << done.dump();
  EXPECT_NE(done.value("reason", "").find("workdir " + c.root() + "/nowhere: No such file or directory"),
            std::string::npos)
      << done.dump();
}

}  // namespace

// The agent's CDI spec (--cdi-spec-dir) in the operator's own podman: a spec copied
// where podman reads specs gives `podman run --device tessel.dev/gaudi=1` card 1's
// stand-in nodes (their device numbers prove they are the dev root's) and nothing else
// of the cards (Gaudi has no shared control node).
TEST_F(ClusterContainer, ROOT_TheAgentsCdiSpecGivesOperatorsPodmanOneCardsNodes) {
  const std::string specs = c.root() + "/cdi";
  fs::create_directories(specs);
  c.agent_args.insert(c.agent_args.end(), {"--cdi-spec-dir", specs});
  c.start_agent("n2");
  const std::string written = specs + "/tessel-gaudi.json";
  ASSERT_TRUE(eventually([&] { return fs::exists(written); }, 30s)) << "no " << written;
  const json spec = json::parse(tessel::testkit::read_file(written));
  EXPECT_EQ(spec.value("kind", ""), "tessel.dev/gaudi") << spec.dump();
  EXPECT_EQ(spec["devices"].size(), 9U) << spec.dump();  // Cards 0-7 and "all".

  // podman reads /etc/cdi and /var/run/cdi; another spec of the kind there would clash.
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (tessel::testkit::read_file(e.path()).find("tessel.dev/gaudi") != std::string::npos)
        GTEST_SKIP() << e.path() << " already defines tessel.dev/gaudi: not running podman with a second spec";
  }
  const bool made_dir = !fs::exists("/var/run/cdi");
  fs::create_directories("/var/run/cdi");
  const std::string copy = "/var/run/cdi/tessel-it-" + std::to_string(::getpid()) + ".json";
  struct RemoveCopy {  // Also when an assertion below ends the test.
    std::string path;
    bool rmdir;
    ~RemoveCopy() {
      ::unlink(path.c_str());
      if (rmdir) ::rmdir("/var/run/cdi");  // Only while empty: nothing else of anyone's goes.
    }
  } guard{copy, made_dir};
  fs::copy_file(written, copy);
  std::string out;
  EXPECT_EQ(run(podman({"run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                        "--device", "tessel.dev/gaudi=1", kImage, "sh", "-c",
                        "ls /dev/accel; stat -c '%t:%T' /dev/accel/accel1 /dev/accel/accel_controlD1"}),
                &out),
            0)
      << out;
  EXPECT_EQ(out, "accel1\naccel_controlD1\nf0:1\nf0:41\n");  // 240:1 and 240:65, as made in SetUp.
}

// A bad --cdi-spec-dir stops the agent at once, with one line naming the flag.
TEST(ClusterCdi, AnAgentWithABadCdiSpecDirRefusesToStart) {
  Cluster c;
  c.start_scheduler();
  const std::string file = c.root() + "/not-a-dir";
  tessel::testkit::write_file(file, "");
  for (const std::string& bad : {std::string("cdi"), file, c.root() + "/missing"}) {
    auto r = tessel::testkit::run_process(
        tessel::testkit::command({TESSEL_AGENT_BIN, "--scheduler", "http://127.0.0.1:" + std::to_string(c.port()),
                                  "--node", "nx", "--state-dir", c.root() + "/nx", "--cdi-spec-dir", bad}),
        20s);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("tessel-agent: --cdi-spec-dir " + bad + ": ", 0), 0U) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}
