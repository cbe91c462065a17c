// Jobs in containers (issue 29), the pure parts: podman's argv for a rank, the mounts
// a node allows, the device nodes a container gets, a launch plan turned into
// containers, and the runtime's detection on a canned podman.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "test_util.hpp"
#include "tessel/agent/container.hpp"
#include "tessel/agent/container_image.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_manager.hpp"

using namespace tessel::agent;

namespace {

void put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// The value after `flag` in argv (each occurrence), in order.
std::vector<std::string> values_of(const std::vector<std::string>& argv, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  return out;
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

PodmanRun sample_run() {
  PodmanRun r;
  r.podman = {"/usr/bin/podman", "--runtime", "runc"};
  r.name = "tessel-j1.0.0-r0";
  r.image = "localhost/tessel-test:1";
  r.command = {"sh", "-c", "echo $X; exit 3", "--privileged"};
  r.env_names = {"HABANA_VISIBLE_MODULES", "RANK"};
  r.uid = 1000;
  r.gid = 1000;
  r.groups = {1000, 44};
  r.workdir = "/home/u/run";
  r.mounts = {{"/data/imagenet", "/data", true}};
  r.devices = {{"/dev/accel/accel2", "/dev/accel/accel2"}};
  r.cpus = {0, 1, 4};
  r.memory_mib = 4096;
  r.pids_max = 1000;
  r.nofile = 20000;
  r.nproc = 4096;
  r.init_path = "/usr/libexec/podman/catatonit";
  return r;
}

TEST(PodmanRunArgv, EveryPartOfTheRankIsAnArgumentOfItsOwn) {
  const auto argv = podman_run_argv(sample_run());
  ASSERT_GE(argv.size(), 5U);
  EXPECT_EQ((std::vector<std::string>(argv.begin(), argv.begin() + 4)),
            (std::vector<std::string>{"/usr/bin/podman", "--runtime", "runc", "run"}));
  EXPECT_TRUE(has(argv, "--rm"));
  EXPECT_EQ(values_of(argv, "--name"), (std::vector<std::string>{"tessel-j1.0.0-r0"}));
  EXPECT_EQ(values_of(argv, "--pull"), (std::vector<std::string>{"never"}));  // Pulled before, by the supervisor.
  EXPECT_EQ(values_of(argv, "--network"), (std::vector<std::string>{"host"}));
  EXPECT_EQ(values_of(argv, "--ipc"), (std::vector<std::string>{"host"}));
  EXPECT_TRUE(values_of(argv, "--shm-size").empty());
  EXPECT_EQ(values_of(argv, "--user"), (std::vector<std::string>{"1000:1000"}));
  EXPECT_EQ(values_of(argv, "--group-add"), (std::vector<std::string>{"44"}));
  EXPECT_EQ(values_of(argv, "--ulimit"), (std::vector<std::string>{"nofile=20000:20000", "nproc=4096:4096"}));
  EXPECT_EQ(values_of(argv, "--cpuset-cpus"), (std::vector<std::string>{"0,1,4"}));
  EXPECT_EQ(values_of(argv, "--memory"), (std::vector<std::string>{"4096m"}));
  EXPECT_EQ(values_of(argv, "--memory-swap"), (std::vector<std::string>{"4096m"}));  // No swap past the limit.
  EXPECT_EQ(values_of(argv, "--pids-limit"), (std::vector<std::string>{"1000"}));
  EXPECT_EQ(values_of(argv, "--device"), (std::vector<std::string>{"/dev/accel/accel2:/dev/accel/accel2"}));
  EXPECT_EQ(values_of(argv, "--mount"),
            (std::vector<std::string>{"type=bind,source=/home/u/run,destination=/home/u/run",
                                      "type=bind,source=/data/imagenet,destination=/data,ro=true"}));
  EXPECT_EQ(values_of(argv, "--workdir"), (std::vector<std::string>{"/home/u/run"}));
  // Variables by name only: their values stay out of argv (podman reads its own env).
  EXPECT_EQ(values_of(argv, "--env"), (std::vector<std::string>{"HABANA_VISIBLE_MODULES", "RANK"}));
  EXPECT_EQ(values_of(argv, "--init-path"), (std::vector<std::string>{"/usr/libexec/podman/catatonit"}));
  // The image, then the job's argv untouched: nothing after the image is podman's.
  const auto image = std::find(argv.begin(), argv.end(), "localhost/tessel-test:1");
  ASSERT_NE(image, argv.end());
  EXPECT_EQ((std::vector<std::string>(image + 1, argv.end())),
            (std::vector<std::string>{"sh", "-c", "echo $X; exit 3", "--privileged"}));
  EXPECT_EQ(std::count(argv.begin(), image, "--privileged"), 0);
}

TEST(PodmanRunArgv, ShmSizeGivesAPrivateIpcAndNoLimitsWhenNoneAreSet) {
  PodmanRun r = sample_run();
  r.shm_size_mib = 2048;
  r.cpus.clear();
  r.memory_mib = 0;
  r.pids_max = 0;
  r.uid.reset();
  r.init_path.clear();
  const auto argv = podman_run_argv(r);
  EXPECT_EQ(values_of(argv, "--ipc"), (std::vector<std::string>{"private"}));
  EXPECT_EQ(values_of(argv, "--shm-size"), (std::vector<std::string>{"2048m"}));
  for (const char* absent : {"--cpuset-cpus", "--memory", "--pids-limit", "--user", "--init"})
    EXPECT_FALSE(has(argv, absent)) << absent;
}

TEST(ResolveMounts, OnlyUnderAllowedDirectoriesAfterSymlinksAndDotDot) {
  testkit::TempDir tmp("mounts");
  std::filesystem::create_directories(tmp.str("allowed/data/set1"));
  std::filesystem::create_directories(tmp.str("secret"));
  std::filesystem::create_directories(tmp.str("allowed-not"));
  std::filesystem::create_symlink(tmp.str("secret"), tmp.str("allowed/escape"));
  const std::vector<std::string> allowed = {std::filesystem::canonical(tmp.str("allowed")).string()};
  const std::string real = allowed[0];

  auto ok =
      resolve_mounts({{tmp.str("allowed/data/set1"), "/data", true}, {tmp.str("allowed"), "/all", false}}, allowed);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ((*ok)[0], (api::Mount{real + "/data/set1", "/data", true}));
  EXPECT_EQ((*ok)[1].source, real);

  auto link = resolve_mounts({{tmp.str("allowed/escape"), "/x", false}}, allowed);
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().message.find("is not under a directory this node allows"), std::string::npos)
      << link.error().message;
  EXPECT_FALSE(resolve_mounts({{tmp.str("allowed/../secret"), "/x", false}}, allowed));
  EXPECT_FALSE(resolve_mounts({{tmp.str("allowed-not"), "/x", false}}, allowed));  // A prefix is not a parent.
  auto missing = resolve_mounts({{tmp.str("allowed/nope"), "/x", false}}, allowed);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos);
  auto none = resolve_mounts({{tmp.str("allowed"), "/x", false}}, {});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("(--allow-mount: none)"), std::string::npos) << none.error().message;
}

TEST(ContainerDevices, OnlyTheTasksCardsAndTheSharedNodesAtTheirUsualNames) {
  testkit::TempDir dev("dev");
  for (const char* f :
       {"accel/accel0", "accel/accel1", "accel/accel2", "accel/accel_controlD0", "accel/accel_controlD1",
        "accel/accel_controlD2", "nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"})
    put(dev.str(f), "");
  const std::string d = dev.str();
  EXPECT_EQ(container_devices(api::Vendor::habana, d, dev.str("no-sys"), {}, {1, 2}),
            (std::vector<ContainerDevice>{{d + "/accel/accel1", "/dev/accel/accel1"},
                                          {d + "/accel/accel2", "/dev/accel/accel2"},
                                          {d + "/accel/accel_controlD1", "/dev/accel/accel_controlD1"},
                                          {d + "/accel/accel_controlD2", "/dev/accel/accel_controlD2"}}));
  EXPECT_EQ(container_devices(api::Vendor::nvidia, d, dev.str("no-sys"), {}, {1}),
            (std::vector<ContainerDevice>{{d + "/nvidia1", "/dev/nvidia1"},
                                          {d + "/nvidiactl", "/dev/nvidiactl"},
                                          {d + "/nvidia-uvm", "/dev/nvidia-uvm"}}));
  EXPECT_TRUE(container_devices(api::Vendor::habana, d, dev.str("no-sys"), {}, {}).empty());
}

ContainerRuntime runtime(const std::vector<std::string>& allowed) {
  ContainerRuntime rt;
  rt.podman = "/usr/bin/podman";
  rt.version = "4.3.1";
  rt.oci_runtime = "runc";
  rt.allow_mounts = allowed;
  rt.nofile = 20000;
  rt.nproc = 4096;
  rt.registry_auth = "/etc/tessel/auth.json";
  return rt;
}

// A one-card Gaudi assignment whose job runs in an image, and its plan as a bare task on
// node n1 (what containerize() starts from).
api::Assignment image_assignment() {
  auto a = agent_test::gaudi_assignment({0}, {0});
  a.spec.image = "localhost/tessel-test:1";
  return a;
}
Result<LaunchPlan> bare_plan(const api::Assignment& a, const StateDir& dir) {
  TaskManagerConfig cfg;
  cfg.node = "n1";
  return make_launch_plan(a, api::NodeInventory{}, dir, cfg, {100});
}

TEST(Containerize, TheRanksRunInPodmanAsRootWithTheJobsUserInside) {
  testkit::TempDir tmp("containerize");
  StateDir dir(tmp.str());
  std::filesystem::create_directories(tmp.str("data"));
  auto a = agent_test::gaudi_assignment({0, 1}, {0, 1});
  a.spec.task_per_device = true;
  a.spec.image = "localhost/tessel-test:1";
  a.spec.image_pull_always = true;
  a.spec.workdir = tmp.str("data");
  a.spec.command = {"python3", "train.py"};
  api::NodeInventory inv;
  TaskManagerConfig cfg;
  cfg.node = "n1";
  cfg.base_env = {{"PATH", "/usr/bin"}, {"HOME", "/home/u"}, {"LANG", "C.UTF-8"}};
  cfg.run_as = RunAs{1000, 1001, "u", "/home/u"};
  auto p = make_launch_plan(a, inv, dir, cfg, {100, 101});
  ASSERT_TRUE(p) << p.error().message;
  p->cgroup = TaskCgroup{};
  p->cgroup->dirs = {{"memory", "/sys/fs/cgroup/memory/tessel/j1.0.0"},
                     {"devices", "/sys/fs/cgroup/devices/tessel/j1.0.0"}};
  p->cgroup->deny = {{'c', 240, 2}};
  p->cgroup->cpus = {0, 1, 2, 3};
  p->cgroup->memory_limit_mib = 2048;
  p->ranks[1].cpus = {2, 3};
  const auto rt = runtime({std::filesystem::canonical(tmp.str()).string()});
  ASSERT_TRUE(containerize(*p, a, inv, rt, tmp.str("no-dev"), tmp.str("no-sys"), {1001, 27}));
  ASSERT_TRUE(p->container);
  EXPECT_EQ(p->container->image, "localhost/tessel-test:1");
  EXPECT_TRUE(p->container->pull_always);
  EXPECT_EQ(p->container->authfile, "/etc/tessel/auth.json");
  ASSERT_EQ(p->container->names.size(), 2U);
  EXPECT_EQ(p->container->names[0].rfind("tessel-j1.0.0-r0-", 0), 0U) << p->container->names[0];
  EXPECT_EQ(p->container->names[1].rfind("tessel-j1.0.0-r1-", 0), 0U) << p->container->names[1];
  EXPECT_EQ(values_of(p->ranks[1].argv, "--name"), (std::vector<std::string>{p->container->names[1]}));
  EXPECT_FALSE(p->uid);  // podman runs as root ...
  EXPECT_FALSE(p->workdir_as_user);
  const auto& argv = p->ranks[1].argv;
  EXPECT_EQ(values_of(argv, "--user"), (std::vector<std::string>{"1000:1001"}));  // ... the job as its user.
  EXPECT_EQ(values_of(argv, "--group-add"), (std::vector<std::string>{"27"}));
  EXPECT_EQ(values_of(argv, "--cpuset-cpus"), (std::vector<std::string>{"2,3"}));  // The rank's share.
  EXPECT_EQ(values_of(p->ranks[0].argv, "--cpuset-cpus"), (std::vector<std::string>{"0,1,2,3"}));
  // A v1 task cgroup holds the containers (below it, as tessel-containers/libpod-ID in
  // each of its hierarchies): its memory limit is theirs, not one per container.
  EXPECT_EQ(values_of(argv, "--cgroup-parent"), (std::vector<std::string>{"tessel-containers"}));
  EXPECT_EQ(values_of(argv, "--cgroups"), (std::vector<std::string>{"no-conmon"}));
  EXPECT_TRUE(values_of(argv, "--memory").empty());
  // runc's device rules fence it; a devices cgroup below the task's could not allow them.
  EXPECT_EQ(p->cgroup->dirs.count("devices"), 0U);
  EXPECT_TRUE(p->cgroup->deny.empty());
  EXPECT_EQ(p->cgroup->dirs.count("memory"), 1U);
  const auto env = values_of(argv, "--env");
  EXPECT_TRUE(std::find(env.begin(), env.end(), "HABANA_VISIBLE_MODULES") != env.end());
  EXPECT_TRUE(std::find(env.begin(), env.end(), "LANG") != env.end());
  EXPECT_TRUE(std::find(env.begin(), env.end(), "PATH") == env.end());  // The image's own.
  EXPECT_TRUE(std::find(env.begin(), env.end(), "HOME") == env.end());
  EXPECT_EQ(argv.back(), "train.py");

  auto round = parse_launch_plan(serialize(*p));
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(*round, *p);
}

// On cgroup v2 no process may sit in a cgroup whose children have controllers: the
// task's processes (podman, conmon) join its leaf, its containers go beside it, and its
// limit holds them all (no --memory of their own) as on v1.
TEST(Containerize, OnCgroupV2TheContainersGoBelowTheTaskBesideItsLeaf) {
  testkit::TempDir tmp("containerize");
  StateDir dir(tmp.str());
  const api::Assignment a = image_assignment();
  const api::NodeInventory inv;
  auto p = bare_plan(a, dir);
  ASSERT_TRUE(p) << p.error().message;
  p->cgroup = TaskCgroup{};
  p->cgroup->version = CgroupVersion::v2;
  p->cgroup->dirs = {{"", "/sys/fs/cgroup/system.slice/tessel-agent.service/tessel/j1.0.0"}};
  p->cgroup->memory_limit_mib = 2048;
  p->cgroup->deny = {{'c', 240, 2}};
  ASSERT_TRUE(containerize(*p, a, inv, runtime({}), tmp.str("no-dev"), tmp.str("no-sys"), {}));
  const auto& argv = p->ranks[0].argv;
  EXPECT_TRUE(values_of(argv, "--memory").empty());
  EXPECT_EQ(values_of(argv, "--cgroup-parent"),
            (std::vector<std::string>{"/system.slice/tessel-agent.service/tessel/j1.0.0"}));
  EXPECT_EQ(values_of(argv, "--cgroups"), (std::vector<std::string>{"no-conmon"}));
  EXPECT_EQ(p->cgroup->leaf, "ranks");
  EXPECT_TRUE(p->cgroup->deny.empty());  // crun's device rules fence the container.
  EXPECT_EQ(p->cgroup->memory_limit_mib, 2048);
  auto round = parse_launch_plan(serialize(*p));
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(*round, *p);
}

TEST(ContainerCgroupParent, V1RelativeV2TheTasksPathInTheMountNoneOutsideIt) {
  TaskCgroup v1;
  v1.dirs = {{"memory", "/sys/fs/cgroup/memory/tessel/j"}};
  EXPECT_EQ(container_cgroup_parent(v1, "/sys/fs/cgroup"), "tessel-containers");
  TaskCgroup v2;
  v2.version = CgroupVersion::v2;
  v2.dirs = {{"", "/sys/fs/cgroup/tessel/j"}};
  EXPECT_EQ(container_cgroup_parent(v2, "/sys/fs/cgroup"), "/tessel/j");
  EXPECT_EQ(container_cgroup_parent(v2, "/sys/fs/cgroup2"), "");
  v2.dirs = {{"", "/sys/fs/cgroup"}};
  EXPECT_EQ(container_cgroup_parent(v2, "/sys/fs/cgroup"), "");
}

TEST(Containerize, AMountOutsideTheAllowedDirectoriesFailsTheLaunch) {
  testkit::TempDir tmp("containerize");
  StateDir dir(tmp.str());
  auto a = agent_test::gaudi_assignment({0}, {0});
  a.spec.image = "busybox";
  a.spec.mounts = {{"/etc", "/host-etc", true}};
  api::NodeInventory inv;
  TaskManagerConfig cfg;
  auto p = make_launch_plan(a, inv, dir, cfg, {100});
  ASSERT_TRUE(p);
  auto st = containerize(*p, a, inv, runtime({std::filesystem::canonical(tmp.str()).string()}), "/nodev", "/nosys", {});
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("mount /etc: /etc is not under a directory this node allows"), std::string::npos)
      << st.error().message;
}

TEST(Containerize, AWorkdirOverTheContainersRootProcSysOrDevFailsTheLaunch) {
  testkit::TempDir tmp("containerize");
  StateDir dir(tmp.str());
  for (const char* w : {"/", "//", "/proc", "/sys/fs", "/dev/shm"}) {
    auto a = agent_test::gaudi_assignment({0}, {0});
    a.spec.image = "busybox";
    a.spec.workdir = w;
    api::NodeInventory inv;
    TaskManagerConfig cfg;
    auto p = make_launch_plan(a, inv, dir, cfg, {100});
    ASSERT_TRUE(p);
    auto st = containerize(*p, a, inv, runtime({}), "/nodev", "/nosys", {});
    ASSERT_FALSE(st) << w;
    EXPECT_NE(st.error().message.find("may not be /, nor under /proc, /sys or /dev"), std::string::npos)
        << st.error().message;
  }
}

// A canned runner: answers `podman --version` with `out`.
class CannedRunner final : public CommandRunner {
 public:
  explicit CannedRunner(std::string out) : out_(std::move(out)) {}
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds) override {
    seen.push_back(argv);
    CommandResult r;
    r.exit_code = 0;
    r.out = out_;
    return r;
  }
  std::vector<std::vector<std::string>> seen;

 private:
  std::string out_;
};

TEST(DetectContainerRuntime, RuncOnCgroupV1CrunOnV2AndNoneWhenAsked) {
  testkit::TempDir tmp("detect");
  put(tmp.str("bin/podman"), "");
  put(tmp.str("bin/runc"), "");
  put(tmp.str("bin/crun"), "");
  for (const char* f : {"bin/podman", "bin/runc", "bin/crun"}) ::chmod(tmp.str(f).c_str(), 0755);
  std::filesystem::create_directories(tmp.str("v1/memory"));
  put(tmp.str("v2/cgroup.controllers"), "cpu memory\n");
  ContainerConfig c;
  c.path_env = tmp.str("bin");
  c.cgroup_root = tmp.str("v1");
  CannedRunner runner("podman version 4.3.1\n");
  auto rt = detect_container_runtime(c, runner);
  ASSERT_TRUE(rt) << rt.error().message;
  ASSERT_TRUE(*rt);
  EXPECT_EQ((*rt)->describe(), "podman 4.3.1, runc");
  EXPECT_EQ(runner.seen.front(), (std::vector<std::string>{tmp.str("bin/podman"), "--version"}));
  EXPECT_GT((*rt)->nofile, 0);
  c.cgroup_root = tmp.str("v2");
  EXPECT_EQ((**detect_container_runtime(c, runner)).oci_runtime, "crun");
  c.mode = "runc";
  EXPECT_EQ((**detect_container_runtime(c, runner)).oci_runtime, "runc");
  c.mode = "none";
  EXPECT_FALSE(*detect_container_runtime(c, runner));
  c.mode = "auto";
  c.allow_mounts = {tmp.str("missing")};
  auto bad = detect_container_runtime(c, runner);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  c.allow_mounts.clear();
  c.podman = tmp.str("bin/nope");
  EXPECT_FALSE(detect_container_runtime(c, runner));
  CannedRunner garbage("Docker version 20\n");
  c.podman = "podman";
  EXPECT_FALSE(detect_container_runtime(c, garbage));
}

// --container-cap-add: the node's operator grants a capability to every container
// (Intel runs Gaudi containers with sys_nice); a name that is none fails the agent's start.
TEST(DetectContainerRuntime, CapabilitiesAreCheckedAndGivenToEveryContainer) {
  EXPECT_EQ(capability_name("SYS_NICE"), "sys_nice");
  EXPECT_EQ(capability_name("CAP_IPC_LOCK"), "ipc_lock");
  EXPECT_EQ(capability_name("sys_nice"), "sys_nice");
  EXPECT_FALSE(capability_name("all"));
  EXPECT_FALSE(capability_name("sys_nice --privileged"));
  EXPECT_FALSE(capability_name(""));

  testkit::TempDir tmp("detect");
  put(tmp.str("bin/podman"), "");
  put(tmp.str("bin/runc"), "");
  for (const char* f : {"bin/podman", "bin/runc"}) ::chmod(tmp.str(f).c_str(), 0755);
  ContainerConfig c;
  c.path_env = tmp.str("bin");
  c.cgroup_root = tmp.str("v1");
  c.cap_add = {"SYS_NICE"};
  CannedRunner runner("podman version 4.3.1\n");
  auto rt = detect_container_runtime(c, runner);
  ASSERT_TRUE(rt && *rt) << (rt ? "no runtime" : rt.error().message);
  EXPECT_EQ((*rt)->cap_add, (std::vector<std::string>{"sys_nice"}));
  c.cap_add = {"sys_nice", "everything"};
  auto bad = detect_container_runtime(c, runner);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "container-cap-add");
  EXPECT_NE(bad.error().message.find("--container-cap-add everything: not a Linux capability"), std::string::npos);

  StateDir dir(tmp.str());
  const api::Assignment a = image_assignment();
  auto p = bare_plan(a, dir);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_TRUE(containerize(*p, a, api::NodeInventory{}, **rt, tmp.str("no-dev"), tmp.str("no-sys"), {}));
  EXPECT_EQ(values_of(p->ranks[0].argv, "--cap-add"), (std::vector<std::string>{"sys_nice"}));
}

TEST(PodmanVersion, Parse) {
  EXPECT_EQ(parse_podman_version("podman version 4.3.1\n"), "4.3.1");
  EXPECT_EQ(parse_podman_version("podman version 5.0.0-dev\n"), "5.0.0-dev");
  EXPECT_FALSE(parse_podman_version("podman version \n"));
  EXPECT_FALSE(parse_podman_version("version 4\n"));
}

TEST(ContainerName, SafeForPodman) {
  EXPECT_EQ(container_name("j-00000042_7.1.0", 3, "0a1b2c3d"), "tessel-j-00000042_7.1.0-r3-0a1b2c3d");
  EXPECT_EQ(container_name("a/b c", 0, ""), "tessel-a_b_c-r0");
}

}  // namespace

// ensure_image and remove_containers against a stand-in podman: a script that records
// its arguments and answers as the test says.
namespace {

class FakePodman {
 public:
  // `exists`: the exit code of `image exists`; `pull`: the pull's script body. Its
  // arguments start with the plan's global options (--runtime runc).
  FakePodman(int exists, const std::string& pull) {
    put(bin(), "#!/bin/sh\necho \"$@\" >> " + calls() + "\ncase \"$3 $4\" in\n  \"image exists\") exit " +
                   std::to_string(exists) + " ;;\n  \"pull --quiet\") " + pull + " ;;\nesac\nexit 0\n");
    ::chmod(bin().c_str(), 0755);
  }
  std::string bin() const { return dir_.str("podman"); }
  std::string calls() const { return dir_.str("calls"); }
  std::string log() const { return dir_.str("container.log"); }
  std::string read_calls() const {
    std::ifstream in(calls());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  ContainerPlan plan(bool always = false) const {
    ContainerPlan p;
    p.podman = {bin(), "--runtime", "runc"};
    p.image = "localhost/train:1";
    p.pull_always = always;
    p.pull_timeout_s = 5;
    p.authfile = "/etc/tessel/auth.json";
    p.names = {"tessel-j1.0.0-r0-ab", "tessel-j1.0.0-r1-ab"};
    return p;
  }

 private:
  testkit::TempDir dir_{"fake-podman"};
};

const std::map<std::string, std::string> kEnv = {{"PATH", "/usr/bin:/bin"}};

TEST(EnsureImage, APresentImageIsNotPulledUnlessAlways) {
  FakePodman podman(0, "exit 0");
  ASSERT_TRUE(ensure_image(podman.plan(), kEnv, podman.log(), [] { ADD_FAILURE() << "no pull here"; }));
  EXPECT_EQ(podman.read_calls(), "--runtime runc image exists localhost/train:1\n");
  ASSERT_TRUE(ensure_image(podman.plan(/*always=*/true), kEnv, podman.log()));
  EXPECT_NE(
      podman.read_calls().find("--runtime runc pull --quiet --authfile /etc/tessel/auth.json localhost/train:1\n"),
      std::string::npos)
      << podman.read_calls();
}

TEST(EnsureImage, AMissingImageIsPulledWithTheNodesCredentials) {
  FakePodman podman(1, "exit 0");
  int told = 0;
  ASSERT_TRUE(ensure_image(podman.plan(), kEnv, podman.log(), [&] { ++told; }));
  EXPECT_EQ(told, 1);  // Before the pull.
  ASSERT_TRUE(ensure_image(podman.plan(), kEnv, podman.log(), [&] { ++told; }));
  EXPECT_EQ(told, 2);
  EXPECT_EQ(podman.read_calls(),
            "--runtime runc image exists localhost/train:1\n"
            "--runtime runc pull --quiet --authfile /etc/tessel/auth.json localhost/train:1\n"
            "--runtime runc image exists localhost/train:1\n"
            "--runtime runc pull --quiet --authfile /etc/tessel/auth.json localhost/train:1\n");
}

TEST(EnsureImage, AFailedPullNamesTheImageAndPodmansError) {
  FakePodman podman(1,
                    "echo 'Trying to pull...' >&2; echo 'Error: reading manifest 1: manifest unknown' >&2; exit 125");
  auto st = ensure_image(podman.plan(), kEnv, podman.log());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "pulling image localhost/train:1: reading manifest 1: manifest unknown");
}

TEST(EnsureImage, APullPastItsTimeoutIsKilled) {
  FakePodman podman(1, "exec sleep 30");
  ContainerPlan plan = podman.plan();
  plan.pull_timeout_s = 1;
  const auto start = std::chrono::steady_clock::now();
  auto st = ensure_image(plan, kEnv, podman.log());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "pulling image localhost/train:1: timed out after 1 s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RemoveContainers, EveryRanksContainerIsRemovedByName) {
  FakePodman podman(0, "exit 0");
  remove_containers(podman.plan(), kEnv, podman.log());
  EXPECT_EQ(podman.read_calls(),
            "--runtime runc rm --force --ignore --time 0 tessel-j1.0.0-r0-ab tessel-j1.0.0-r1-ab\n");
}

}  // namespace
