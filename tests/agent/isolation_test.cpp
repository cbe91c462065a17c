// Issue 28, the agent side, without root: CPU choice by NUMA, cards' device nodes per
// vendor, and the cgroup layer on a plain directory standing in for cgroupfs (v1 and v2
// layouts). The real hierarchy is exercised by tests/integration/cluster_isolation_test.cpp.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <algorithm>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "tessel/agent/cgroup_files.hpp"
#include "tessel/agent/cpu_choice.hpp"
#include "tessel/agent/device_nodes.hpp"
#include "tessel/agent/device_program.hpp"
#include "tessel/agent/host_shape.hpp"
#include "tessel/agent/isolation.hpp"
#include "tessel/agent/task_cgroup.hpp"
#include "tessel/agent/task_files.hpp"

using namespace tessel;
using namespace tessel::agent;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string get(const std::string& path) {
  auto t = read_cgroup_file(path);
  return t ? *t : "<missing>";
}

std::vector<api::NumaNode> two_nodes() { return {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}}; }
const std::vector<int> kEight = {0, 1, 2, 3, 4, 5, 6, 7};

// A v1 hierarchy as this project's machines have it: each controller a directory.
void fake_v1(const std::string& root) {
  for (const std::string& c : v1_controllers()) put(root + "/" + c + "/cgroup.procs", "");
  put(root + "/cpuset/cpuset.cpus", "0-7\n");
  put(root + "/cpuset/cpuset.mems", "0-1\n");
}

// fake_v1() at `root`, with the parent "tessel" in each controller, and the task
// cgroup j.0.0 below it (not made yet).
TaskCgroup fake_v1_task(const testkit::TempDir& root) {
  fake_v1(root.str());
  TaskCgroup cg;
  for (const std::string& c : v1_controllers()) {
    fs::create_directories(root.str(c + "/tessel"));
    cg.dirs[c] = root.str(c + "/tessel/j.0.0");
  }
  return cg;
}

api::Assignment assignment(const std::string& id, std::vector<int> indices) {
  api::Assignment a;
  a.id = id;
  a.job_id = "j";
  a.module_ids = indices;
  a.indices = std::move(indices);
  a.spec.command = {"true"};
  return a;
}

}  // namespace

TEST(CpuChoice, TakesTheCardsNumaNodeFirst) {
  auto c = choose_cpus(2, kEight, {}, two_nodes(), {1});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c, (std::vector<int>{4, 5}));
  // More than its node has: the rest from the next node.
  c = choose_cpus(6, kEight, {}, two_nodes(), {1});
  EXPECT_EQ(*c, (std::vector<int>{0, 1, 4, 5, 6, 7}));
  // Cards on both nodes: the node with more of them first.
  c = choose_cpus(4, kEight, {}, two_nodes(), {0, 1, 1});
  EXPECT_EQ(*c, (std::vector<int>{4, 5, 6, 7}));
  // No card (or unknown): by node id.
  c = choose_cpus(3, kEight, {}, two_nodes(), {-1});
  EXPECT_EQ(*c, (std::vector<int>{0, 1, 2}));
}

TEST(CpuChoice, SkipsCpusOfRunningTasksAndSaysWhenTooFewAreFree) {
  auto c = choose_cpus(2, kEight, {4, 5, 6}, two_nodes(), {1});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (std::vector<int>{0, 7}));  // 7 on the card's node, then node 0.
  auto none = choose_cpus(4, kEight, {0, 1, 2, 3, 4, 5}, two_nodes(), {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "4 CPUs asked, 2 of the node's 8 are free");
  // CPUs on no known NUMA node come last; an empty layout still works.
  EXPECT_EQ(*choose_cpus(2, {0, 1, 9}, {}, {{0, {9}}}, {}), (std::vector<int>{0, 9}));
  EXPECT_EQ(*choose_cpus(2, {3, 1, 2}, {}, {}, {}), (std::vector<int>{1, 2}));
}

TEST(CpuChoice, OneRankPerCardGetsAShareNearItsCard) {
  EXPECT_EQ(split_cpus({0, 1, 4, 5}, {1, 0}, two_nodes()), (std::vector<std::vector<int>>{{4, 5}, {0, 1}}));
  // Uneven: the first ranks get one more; a rank short on its node takes what is left.
  EXPECT_EQ(split_cpus({0, 1, 2, 4, 5}, {0, 0}, two_nodes()), (std::vector<std::vector<int>>{{0, 1, 2}, {4, 5}}));
  EXPECT_EQ(split_cpus({0, 4, 5, 6}, {0, 1, -1}, two_nodes()), (std::vector<std::vector<int>>{{0, 5}, {4}, {6}}));
  EXPECT_TRUE(split_cpus({0}, {0, 1}, two_nodes()).empty());  // Fewer CPUs than ranks: not pinned.
  EXPECT_TRUE(split_cpus({0, 1}, {0}, two_nodes()).empty());  // One rank: the whole cpuset.
}

TEST(DeviceNodes, EachVendorsCardNodesAndSharedNodes) {
  testkit::TempDir dev("dev");
  for (const char* f : {"accel/accel0", "accel/accel1", "accel/accel_controlD0", "accel/accel_controlD1",
                        "accel/accelx", "nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "davinci3", "davinci_manager",
                        "dri/card0", "dri/card1", "dri/renderD128", "dri/renderD129", "kfd"})
    put(dev.str(f), "");
  const std::string none = dev.str("no-sysfs");
  EXPECT_EQ(find_card_nodes(api::Vendor::habana, dev.str(), none, {}),
            (std::vector<CardNode>{
                {"accel/accel0", 0}, {"accel/accel1", 1}, {"accel/accel_controlD0", 0}, {"accel/accel_controlD1", 1}}));
  EXPECT_EQ(find_card_nodes(api::Vendor::nvidia, dev.str(), none, {}),
            (std::vector<CardNode>{{"nvidia0", 0}, {"nvidia1", 1}}));
  EXPECT_EQ(find_card_nodes(api::Vendor::ascend, dev.str(), none, {}), (std::vector<CardNode>{{"davinci3", 3}}));
  EXPECT_EQ(find_card_nodes(api::Vendor::amd, dev.str(), none, {}),
            (std::vector<CardNode>{{"dri/card0", 0}, {"dri/card1", 1}, {"dri/renderD128", 0}, {"dri/renderD129", 1}}));
  EXPECT_EQ(shared_control_nodes(api::Vendor::nvidia),
            (std::vector<std::string>{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}));
  EXPECT_EQ(shared_control_nodes(api::Vendor::amd), (std::vector<std::string>{"kfd"}));
  EXPECT_EQ(shared_control_nodes(api::Vendor::ascend),
            (std::vector<std::string>{"davinci_manager", "devmm_svm", "hisi_hdc"}));
  EXPECT_TRUE(shared_control_nodes(api::Vendor::habana).empty());
}

TEST(DeviceNodes, AmdCardsAreMatchedByTheirPciAddressWhenSysfsKnowsIt) {
  testkit::TempDir dev("dev"), sys("sys");
  for (const char* f : {"dri/card0", "dri/card1", "dri/card2", "dri/renderD128", "dri/renderD129"}) put(dev.str(f), "");
  // Card index 0 is at 0000:c1:00.0, whose DRM nodes are card2/renderD129 (card0 is a BMC's VGA).
  put(sys.str("bus/pci/devices/0000:c1:00.0/drm/card2"), "");
  put(sys.str("bus/pci/devices/0000:c1:00.0/drm/renderD129"), "");
  api::Device d;
  d.index = 0;
  d.bus_id = "0000:c1:00.0";
  EXPECT_EQ(
      find_card_nodes(api::Vendor::amd, dev.str(), sys.str(), {d}),
      (std::vector<CardNode>{
          {"dri/card0", -1}, {"dri/card1", -1}, {"dri/card2", 0}, {"dri/renderD128", -1}, {"dri/renderD129", 0}}));
}

TEST(DeviceNodes, RulesDenyOnlyTheOtherCardsByTheirDeviceNumbers) {
  testkit::TempDir dev("dev");
  fs::create_directories(dev.str("accel"));
  fs::create_symlink("/dev/null", dev.str("accel/accel0"));  // c 1:3, standing in for a card.
  fs::create_symlink("/dev/zero", dev.str("accel/accel1"));  // c 1:5.
  put(dev.str("accel/accel2"), "");                          // Not a device file: nothing to deny.
  const auto nodes = find_card_nodes(api::Vendor::habana, dev.str(), "", {});
  EXPECT_EQ(other_cards_rules(nodes, {1}, dev.str()), (std::vector<DeviceRule>{{'c', 1, 3}}));
  EXPECT_EQ(other_cards_rules(nodes, {0, 1}, dev.str()), std::vector<DeviceRule>{});
  EXPECT_EQ(other_cards_rules(nodes, {}, dev.str()), (std::vector<DeviceRule>{{'c', 1, 3}, {'c', 1, 5}}));
  EXPECT_EQ(v1_device_rule({'c', 240, 3}), "c 240:3 rwm");
}

TEST(HostShape, NumaLayoutMemoryAndTheCardsNode) {
  testkit::TempDir sys("sys");
  put(sys.str("devices/system/node/node0/cpulist"), "0-3\n");
  put(sys.str("devices/system/node/node1/cpulist"), "4-7\n");
  put(sys.str("devices/system/node/node2/cpulist"), "\n");  // Memory only.
  put(sys.str("devices/system/node/possible"), "0-2\n");
  const HostShape s = host_shape(sys.str(), {0, 1, 2, 3, 4, 5}, "MemTotal:       16777216 kB\nMemFree: 1 kB\n");
  EXPECT_EQ(s.cpus.size(), 6u);
  EXPECT_EQ(s.memory_mib, 16384);
  EXPECT_EQ(s.numa, (std::vector<api::NumaNode>{{0, {0, 1, 2, 3}}, {1, {4, 5}}}));
  put(sys.str("bus/pci/devices/0000:1a:00.0/numa_node"), "1\n");
  put(sys.str("bus/pci/devices/0000:1b:00.0/numa_node"), "-1\n");
  EXPECT_EQ(card_numa_node(sys.str(), "00000000:1A:00.0"), 1);  // nvidia-smi's spelling.
  EXPECT_EQ(card_numa_node(sys.str(), "0000:1a:00.0"), 1);
  EXPECT_EQ(card_numa_node(sys.str(), "0000:1b:00.0"), std::nullopt);
  EXPECT_EQ(card_numa_node(sys.str(), "../../x"), std::nullopt);
}

TEST(TaskCgroupV1, CreatesWritesTheLimitsReadsTheUseAndRemoves) {
  testkit::TempDir root("cg");
  TaskCgroup cg = fake_v1_task(root);
  put(root.str("cpuset/tessel/cpuset.mems"), "0-1\n");
  cg.cpus = {2, 3, 5};
  cg.memory_limit_mib = 64;
  cg.pids_max = 100;
  cg.deny = {{'c', 240, 0}, {'c', 240, 2}};
  ASSERT_TRUE(create_task_cgroup(cg));
  EXPECT_EQ(get(root.str("cpuset/tessel/j.0.0/cpuset.cpus")), "2-3,5");
  EXPECT_EQ(get(root.str("cpuset/tessel/j.0.0/cpuset.mems")), "0-1");
  EXPECT_EQ(get(root.str("memory/tessel/j.0.0/memory.limit_in_bytes")), "67108864");
  EXPECT_EQ(get(root.str("memory/tessel/j.0.0/memory.memsw.limit_in_bytes")), "<missing>");  // No swap accounting.
  EXPECT_EQ(get(root.str("devices/tessel/j.0.0/devices.deny")), "c 240:0 rwmc 240:2 rwm");
  EXPECT_EQ(get(root.str("pids/tessel/j.0.0/pids.max")), "100");

  // launch.json carries it to the supervisor.
  LaunchPlan p;
  p.assignment_id = "j.0.0";
  p.workdir = "/tmp";
  p.ranks.push_back({{"true"}, {}, "/tmp/r0.log", 0, {2, 3}});
  p.cgroup = cg;
  auto back = parse_launch_plan(serialize(p));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, p);

  put(root.str("cpuacct/tessel/j.0.0/cpuacct.usage"), "2500000000\n");
  put(root.str("memory/tessel/j.0.0/memory.max_usage_in_bytes"), "67108865\n");
  put(root.str("memory/tessel/j.0.0/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  const TaskUsage u = read_task_usage(cg);
  EXPECT_EQ(u.cpu_seconds, 2.5);
  EXPECT_EQ(u.max_rss_mib, 65);
  EXPECT_EQ(u.oom_kills, 1);
  EXPECT_TRUE(task_cgroup_pids(cg).empty());
  EXPECT_TRUE(kill_task_cgroup(cg, 0));                  // Nothing in it.
  for (const auto& [c, d] : cg.dirs) fs::remove_all(d);  // What a kernel would do with its files.
  EXPECT_TRUE(remove_task_cgroup(cg));
  EXPECT_TRUE(remove_task_cgroup(cg));  // Gone already: fine.
}

// A container's cgroup below the task's (tessel-containers/libpod-ID, made by runc):
// its processes are the task's to kill, an OOM kill v1 counted there is the task's,
// and removing the task's cgroup removes it first.
TEST(TaskCgroupV1, TheCgroupsOfItsContainersBelowItAreTheTasks) {
  testkit::TempDir root("cg");
  TaskCgroup cg = fake_v1_task(root);
  put(root.str("cpuset/tessel/cpuset.mems"), "0-1\n");
  put(root.str("cpuset/tessel/cpuset.cpus"), "0-7\n");
  cg.memory_limit_mib = 64;
  ASSERT_TRUE(create_task_cgroup(cg));
  const std::string ctr = std::string("/") + kContainerCgroupParent + "/libpod-abc";
  for (const std::string& c : v1_controllers()) fs::create_directories(cg.dirs[c] + ctr);
  put(cg.dirs["freezer"] + "/cgroup.procs", "100\n");
  put(cg.dirs["freezer"] + ctr + "/cgroup.procs", "200\n201\n");
  auto pids = task_cgroup_pids(cg);
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<int>{100, 200, 201}));

  put(cg.dirs["memory"] + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
  put(cg.dirs["memory"] + ctr + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  put(cg.dirs["memory"] + "/memory.failcnt", "3\n");
  TaskUsage u = read_task_usage(cg);
  EXPECT_EQ(u.oom_kills, 1);
  EXPECT_TRUE(u.limit_hit);
  fs::remove_all(cg.dirs["memory"] + "/" + kContainerCgroupParent);  // podman removed the container.
  u = read_task_usage(cg);
  EXPECT_EQ(u.oom_kills, 0);
  EXPECT_TRUE(u.limit_hit) << "what is left to tell a container's OOM kill";
  put(cg.dirs["memory"] + "/memory.failcnt", "0\n");
  put(cg.dirs["memory"] + "/memory.memsw.failcnt", "2\n");  // Swap accounted: that limit came first.
  EXPECT_TRUE(read_task_usage(cg).limit_hit);
  put(cg.dirs["memory"] + "/memory.memsw.failcnt", "0\n");
  put(cg.dirs["memory"] + "/memory.max_usage_in_bytes", "67108863\n");
  EXPECT_FALSE(read_task_usage(cg).limit_hit);
  put(cg.dirs["memory"] + "/memory.max_usage_in_bytes", "67108864\n");  // Its peak at the limit.
  EXPECT_TRUE(read_task_usage(cg).limit_hit);

  for (const std::string& c : v1_controllers()) put(cg.dirs[c] + "/cgroup.procs", "");
  put(cg.dirs["freezer"] + ctr + "/cgroup.procs", "");
  ASSERT_TRUE(remove_task_cgroup(cg));
  for (const auto& [c, d] : cg.dirs) EXPECT_FALSE(fs::exists(d)) << d;
}

TEST(TaskCgroupV1, WithoutCpusTheTaskGetsItsParentsAndSwapIsCappedWhereAccounted) {
  testkit::TempDir root("cg");
  TaskCgroup cg;
  cg.dirs = {{"cpuset", root.str("cpuset/t")}, {"memory", root.str("memory/t")}};
  put(root.str("cpuset/cpuset.cpus"), "0-7\n");
  put(root.str("cpuset/cpuset.mems"), "0\n");
  put(root.str("memory/t/memory.memsw.limit_in_bytes"), "");
  cg.memory_limit_mib = 1;
  ASSERT_TRUE(create_task_cgroup(cg));
  EXPECT_EQ(get(root.str("cpuset/t/cpuset.cpus")), "0-7");
  EXPECT_EQ(get(root.str("memory/t/memory.memsw.limit_in_bytes")), "1048576");
}

TEST(TaskCgroupV1, AFailedSetupRemovesWhatItMade) {
  testkit::TempDir root("cg");
  TaskCgroup cg;
  cg.dirs = {{"cpuset", root.str("cpuset/t")}};
  fs::create_directories(root.str("cpuset"));  // No cpuset.mems in the parent.
  auto st = create_task_cgroup(cg);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cpuset.mems"), std::string::npos) << st.error().message;
}

TEST(TaskCgroupV2, CreatesWritesTheLimitsAndReadsTheUse) {
  testkit::TempDir root("cg");
  TaskCgroup cg;
  cg.version = CgroupVersion::v2;
  cg.dirs = {{"", root.str("tessel/j.0.0")}};
  fs::create_directories(root.str("tessel"));
  cg.cpus = {0, 1};
  cg.memory_limit_mib = 4096;
  cg.pids_max = 7;
  cg.deny = {};
  ASSERT_TRUE(create_task_cgroup(cg));
  EXPECT_EQ(get(root.str("tessel/j.0.0/cpuset.cpus")), "0-1");
  EXPECT_EQ(get(root.str("tessel/j.0.0/memory.max")), "4294967296");
  EXPECT_EQ(get(root.str("tessel/j.0.0/pids.max")), "7");
  put(root.str("tessel/j.0.0/cpu.stat"), "usage_usec 1500000\nuser_usec 1000000\n");
  put(root.str("tessel/j.0.0/memory.peak"), "1048576\n");
  put(root.str("tessel/j.0.0/memory.events"), "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  const TaskUsage u = read_task_usage(cg);
  EXPECT_EQ(u.cpu_seconds, 1.5);
  EXPECT_EQ(u.max_rss_mib, 1);
  EXPECT_EQ(u.oom_kills, 1);
}

// A task whose ranks run in containers: its limits on its dir, the controllers enabled
// for its children, its processes joining its leaf; kill and removal take the subtree.
TEST(TaskCgroupV2, ALeafHoldsTheTasksProcessesBesideItsContainers) {
  testkit::TempDir root("cg");
  TaskCgroup cg;
  cg.version = CgroupVersion::v2;
  cg.dirs = {{"", root.str("tessel/j.0.0")}};
  cg.leaf = kV2RanksLeaf;
  cg.memory_limit_mib = 64;
  fs::create_directories(root.str("tessel/j.0.0"));
  put(root.str("tessel/j.0.0/cgroup.controllers"), "cpuset cpu io memory pids\n");
  ASSERT_TRUE(create_task_cgroup(cg));
  EXPECT_EQ(get(root.str("tessel/j.0.0/memory.max")), "67108864");
  EXPECT_EQ(get(root.str("tessel/j.0.0/cgroup.subtree_control")), "+cpuset +cpu +memory +pids");
  ASSERT_TRUE(fs::is_directory(root.str("tessel/j.0.0/ranks")));
  put(root.str("tessel/j.0.0/ranks/cgroup.procs"), "");
  auto fds = open_task_cgroup_procs(cg);
  ASSERT_TRUE(fds) << fds.error().message;
  ASSERT_EQ(fds->size(), 1U);
  ASSERT_TRUE(join_task_cgroup(*fds));
  for (int fd : *fds) ::close(fd);
  EXPECT_EQ(get(root.str("tessel/j.0.0/ranks/cgroup.procs")), "0");  // The leaf's, not the task's.
  put(root.str("tessel/j.0.0/ranks/cgroup.procs"), "");
  fs::create_directories(root.str("tessel/j.0.0/libpod-abc"));  // A container's, beside it.
  put(root.str("tessel/j.0.0/libpod-abc/cgroup.procs"), "4242\n");
  EXPECT_EQ(task_cgroup_pids(cg), std::vector<int>{4242});
  put(root.str("tessel/j.0.0/libpod-abc/cgroup.procs"), "");
  ASSERT_TRUE(remove_task_cgroup(cg));
  EXPECT_FALSE(fs::exists(root.str("tessel/j.0.0")));

  auto round = task_cgroup_from_json(to_json(cg));
  ASSERT_TRUE(round) << round.error().message;
  EXPECT_EQ(*round, cg);
  nlohmann::json bad = to_json(cg);
  bad["leaf"] = "../x";
  EXPECT_FALSE(task_cgroup_from_json(bad));
  bad = to_json(cg);
  bad.erase("leaf");  // A plan of an older agent.
  ASSERT_TRUE(task_cgroup_from_json(bad));
  EXPECT_EQ(task_cgroup_from_json(bad)->leaf, "");
}

TEST(Isolation, OpensTheV1SubtreeUnderTheAgentsOwnCgroupsAndPlansTasks) {
  testkit::TempDir root("cg"), dev("dev");
  fake_v1(root.str());
  IsolationConfig cfg;
  cfg.cgroup_root = root.str();
  cfg.subtree = "tessel";
  cfg.dev_root = dev.str();
  cfg.pids_max = 512;
  cfg.self_cgroup = "9:name=systemd:/\n4:memory:/api/c9\n3:cpuset:/\n0::/\n";
  HostShape host{kEight, 65536, two_nodes()};
  auto iso = Isolation::open(cfg, host);
  ASSERT_TRUE(iso) << iso.error().message;
  EXPECT_EQ((*iso)->kind(), "cgroup1");
  EXPECT_TRUE(fs::is_directory(root.str("memory/api/c9/tessel")));
  EXPECT_EQ(get(root.str("cpuset/tessel/cpuset.cpus")), "0-7");  // A v1 cpuset level gets its parent's.
  EXPECT_EQ((*iso)->task_dirs("a.0.0").at("memory"), root.str("memory/api/c9/tessel/a.0.0"));

  fs::create_directories(dev.str("accel"));
  fs::create_symlink("/dev/null", dev.str("accel/accel0"));
  fs::create_symlink("/dev/zero", dev.str("accel/accel1"));
  api::NodeInventory inv;
  inv.devices.resize(2);
  inv.devices[1].index = 1;
  inv.devices[1].module_id = 1;
  inv.devices[1].numa_node = 1;
  api::Assignment a = assignment("a.0.0", {1});
  a.cpus = 2;
  a.memory_mib = 4096;
  auto plan = (*iso)->plan(a, inv, {4});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_TRUE(plan->has_value());
  const TaskCgroup& cg = **plan;
  EXPECT_EQ(cg.cpus, (std::vector<int>{5, 6}));  // Near its card, past the taken CPU 4.
  EXPECT_EQ(cg.memory_limit_mib, 4096);
  EXPECT_EQ(cg.pids_max, 512);
  EXPECT_EQ(cg.deny, (std::vector<DeviceRule>{{'c', 1, 3}}));  // Card 0's node only.
  a.cpus = 9;
  auto too_many = (*iso)->plan(a, inv, {});
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().message, "9 CPUs asked, 8 of the node's 8 are free");
  a.cpus = 0;
  EXPECT_TRUE((*(*iso)->plan(a, inv, {}))->cpus.empty());  // No cpuset of its own.
}

TEST(Isolation, SweepClearsTheCgroupsOfTasksNoLongerRunning) {
  testkit::TempDir root("cg");
  fake_v1(root.str());
  IsolationConfig cfg;
  cfg.cgroup_root = root.str();
  cfg.self_cgroup = "";
  auto iso = Isolation::open(cfg, HostShape{kEight, 1024, {}});
  ASSERT_TRUE(iso) << iso.error().message;
  for (const std::string& c : v1_controllers()) {
    fs::create_directories(root.str(c + "/tessel/gone.0.0"));
    fs::create_directories(root.str(c + "/tessel/running.0.0"));
  }
  EXPECT_EQ((*iso)->sweep({"running.0.0"}), std::vector<std::string>{"gone.0.0"});
  EXPECT_FALSE(fs::exists(root.str("memory/tessel/gone.0.0")));
  EXPECT_TRUE(fs::exists(root.str("memory/tessel/running.0.0")));
}

TEST(Isolation, OnV2TheAgentMovesIntoALeafAndEnablesControllers) {
  testkit::TempDir root("cg");
  put(root.str("cgroup.controllers"), "cpuset cpu io memory pids\n");
  put(root.str("system.slice/tessel-agent.service/cgroup.controllers"), "cpuset cpu io memory pids\n");
  put(root.str("system.slice/tessel-agent.service/cgroup.procs"), "4242\n");
  IsolationConfig cfg;
  cfg.cgroup_root = root.str();
  cfg.self_cgroup = "0::/system.slice/tessel-agent.service\n";
  cfg.self_pid = 4242;
  cfg.try_device_program = false;  // No cgroup2 here for bpf(2) to attach to.
  auto iso = Isolation::open(cfg, HostShape{kEight, 1024, {}});
  ASSERT_TRUE(iso) << iso.error().message;
  EXPECT_EQ((*iso)->kind(), "cgroup2");
  const std::string own = root.str("system.slice/tessel-agent.service");
  EXPECT_EQ(get(own + "/agent/cgroup.procs"), "4242");
  EXPECT_EQ(get(own + "/cgroup.subtree_control"), "+cpuset +cpu +memory +pids");
  EXPECT_TRUE(fs::is_directory(own + "/tessel"));
  EXPECT_EQ((*iso)->task_dirs("a.0.0").at(""), own + "/tessel/a.0.0");
  auto plan = (*iso)->plan(assignment("a.0.0", {}), api::NodeInventory{}, {});
  ASSERT_TRUE(plan);
  EXPECT_TRUE((*plan)->deny.empty());  // No cards.
}

TEST(Isolation, RefusesWhereNoHierarchyIsAndIsOffWhenToldNone) {
  testkit::TempDir root("cg");
  IsolationConfig cfg;
  cfg.cgroup_root = root.str();
  auto iso = Isolation::open(cfg, HostShape{});
  ASSERT_FALSE(iso);
  EXPECT_EQ(iso.error().message, "no cgroup hierarchy at " + root.str() + " (neither cgroup2 nor v1 controllers)");
  cfg.mode = "cgroup1";
  iso = Isolation::open(cfg, HostShape{});
  ASSERT_FALSE(iso);
  EXPECT_EQ(iso.error().message, "cgroup v1 controller cpuset is not mounted at " + root.str("cpuset"));
  cfg.mode = "none";
  iso = Isolation::open(cfg, HostShape{});
  ASSERT_TRUE(iso);
  EXPECT_EQ((*iso)->kind(), "none");
  auto plan = (*iso)->plan(assignment("a.0.0", {}), api::NodeInventory{}, {});
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->has_value());
}

TEST(Isolation, OwnCgroupPathPerController) {
  const std::string text = "5:cpu,cpuacct:/a\n4:memory:/b/c\n0::/svc\n";
  EXPECT_EQ(own_cgroup_path(text, "cpuacct"), "/a");
  EXPECT_EQ(own_cgroup_path(text, "memory"), "/b/c");
  EXPECT_EQ(own_cgroup_path(text, ""), "/svc");
  EXPECT_EQ(own_cgroup_path(text, "pids"), std::nullopt);
}

TEST(DeviceProgram, OneBlockPerDeniedDeviceThenAllow) {
  EXPECT_EQ(device_program({}).size(), 6u);  // Four loads of the context, then "allow".
  const auto p = device_program({{'c', 240, 1}, {'b', 8, 0}});
  ASSERT_EQ(p.size(), 16u);
  bpf_insn last{};
  std::memcpy(&last, &p.back(), sizeof last);
  EXPECT_EQ(last.code, BPF_JMP | BPF_EXIT);
  bpf_insn type_check{};
  std::memcpy(&type_check, &p[9], sizeof type_check);  // The second rule's type: block.
  EXPECT_EQ(type_check.imm, BPF_DEVCG_DEV_BLOCK);
}

// The device program on a real cgroup2 hierarchy: pure v2, or the unified mount of a
// hybrid one (the kernel consults it along with the v1 devices controller).
TEST(DeviceProgram, ROOT_AProcessInTheCgroupCannotOpenADeniedNode) {
  std::string unified = "/sys/fs/cgroup";
  if (!fs::exists(unified + "/cgroup.controllers")) unified += "/unified";
  if (::geteuid() != 0 || !fs::exists(unified + "/cgroup.controllers"))
    GTEST_SKIP() << "needs root and a cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  // In this process's own cgroup2 directory (a v2 rule: processes move only within a subtree we may write).
  std::ifstream self("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  const std::string dir = unified + (own == "/" ? "" : own) + "/tessel-dp-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
  testkit::TempDir dev("dev");
  ASSERT_EQ(::mknod(dev.str("card0").c_str(), S_IFCHR | 0600, makedev(240, 0)), 0);
  ASSERT_EQ(::mknod(dev.str("card1").c_str(), S_IFCHR | 0600, makedev(240, 1)), 0);
  auto st = attach_device_program(dir, {{'c', 240, 1}});
  ASSERT_TRUE(st) << st.error().message;
  const int procs = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(procs, 0);
  const std::string card0 = dev.str("card0"), card1 = dev.str("card1");
  const pid_t child = ::fork();
  if (child == 0) {
    if (!join_task_cgroup({procs})) ::_exit(10);
    const int allowed = ::open(card0.c_str(), O_RDONLY);
    const int allowed_errno = errno;
    const int denied = ::open(card1.c_str(), O_RDONLY);
    const int denied_errno = errno;
    if (allowed >= 0 || allowed_errno != ENXIO) ::_exit(11);  // No driver: ENXIO, past the cgroup.
    if (denied >= 0 || denied_errno != EPERM) ::_exit(12);
    ::_exit(0);
  }
  ::close(procs);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: could not join; 11: the allowed node was refused; 12: the denied one opened";
}
