// The real scheduler and two real agents on loopback run torch.distributed (Gloo)
// jobs of 2 nodes x 2 ranks from the environment Tessel sets alone.
#include <gtest/gtest.h>

#include <filesystem>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string kPython = TESSEL_PYTHON3;
const std::string kScripts = TESSEL_LAUNCHERS_DIR;

class ClusterLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    // These tests are about torch.distributed, not liveness. While four Python
    // processes import torch on two cores, an ASan agent's heartbeats (each after an
    // inventory read, a fake hl-smi process) have come more than the test cluster's
    // usual 2 s apart, and the scheduler failed the job with "node n2 down" (seen in
    // CI's sanitizer run, 3 of 3 tests, then 2 of 4 runs alone).
    c.heartbeat_timeout_s = 15;
    c.start_scheduler();
    c.start_agent("n1");
    c.start_agent("n2");
    ASSERT_TRUE(c.wait_node_state("n1", "ready"));
    ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  }

  // Runs `command` as a 2-node job with 2 cards per node; returns the finished job.
  json run_job(const json& command, bool per_device) {
    json spec = {{"command", command},
                 {"nodes", 2},
                 {"devices", 2},
                 {"time_limit_s", 200},
                 {"env", {{"GLOO_SOCKET_IFNAME", "lo"}, {"OMP_NUM_THREADS", "1"}}}};
    if (per_device) spec["tasks_per_node"] = "device";
    auto job = c.submit(spec);
    auto done = c.wait_job(job["id"], {"succeeded", "failed", "cancelled"}, 240s);
    if (!done) return json();
    std::string logs;
    for (const auto& a : (*done)["allocations"])
      for (int local = 0; local < (per_device ? 2 : 1); ++local)
        logs += "\n--- " + a["node"].get<std::string>() + " rank " + std::to_string(local) + ":\n" +
                c.log(a["node"], job["id"], a["rank"], local);
    EXPECT_EQ((*done)["state"], "succeeded") << done->dump() << logs;
    EXPECT_EQ((*done)["master_addr"], "127.0.0.1");
    return *done;
  }

  // Every rank 0..3 of `job` wrote its all-reduce result to `out`: the sum of rank+1
  // over a world of 4, ranks 2k and 2k+1 on the node of assignment k.
  void expect_all_reduce(const json& job, const std::string& out) {
    ASSERT_TRUE(job.is_object());
    std::map<int, std::string> node_of;
    for (const auto& a : job["allocations"]) node_of[a["rank"].get<int>()] = a["node"];
    ASSERT_EQ(node_of.size(), 2u);
    EXPECT_NE(node_of[0], node_of[1]);
    const json nodes_by_rank = {node_of[0], node_of[0], node_of[1], node_of[1]};
    for (int rank = 0; rank < 4; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      json r = json::parse(tessel::testkit::read_file(out + "/rank" + std::to_string(rank) + ".json"), nullptr, false);
      ASSERT_TRUE(r.is_object()) << "no result from rank " << rank << " in " << out;
      EXPECT_EQ(r["sum"], 10.0);
      EXPECT_EQ(r["rank"], rank);
      EXPECT_EQ(r["env_rank"], rank);
      EXPECT_EQ(r["world_size"], 4);
      EXPECT_EQ(r["local_rank"], rank % 2);
      EXPECT_EQ(r["node"], node_of[rank / 2]);
      EXPECT_EQ(r["nodes_by_rank"], nodes_by_rank);
    }
  }

  Cluster c;
};

// One task per node: torchrun's parser, run in each task, resolves the job's
// topology from the PET_* variables alone.
TEST_F(ClusterLaunch, TorchrunParsesEachNodesEnvironment) {
  json job = run_job({kPython, kScripts + "/torchrun_args.py"}, false);
  ASSERT_TRUE(job.is_object());
  ASSERT_EQ(job["allocations"].size(), 2u);
  for (const auto& a : job["allocations"]) {
    const std::string log = c.log(a["node"], job["id"], a["rank"]);
    const std::string marker = "torchrun-args: ";
    const auto at = log.find(marker);
    ASSERT_NE(at, std::string::npos) << log;
    json v = json::parse(log.substr(at + marker.size(), log.find('\n', at) - at - marker.size()), nullptr, false);
    EXPECT_EQ(v["nnodes"], "2") << log;
    EXPECT_EQ(v["node_rank"], a["rank"]) << log;
    EXPECT_EQ(v["master_addr"], job["master_addr"]) << log;
    EXPECT_EQ(v["master_port"], job["master_port"]) << log;
    EXPECT_EQ(v["nproc_per_node"], "2") << log;
  }
}

// tasks_per_node "device": each task is one rank and initializes from RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT.
TEST_F(ClusterLaunch, AllReduceWithOneTaskPerDevice) {
  const std::string out = c.root() + "/out";
  std::filesystem::create_directories(out);
  expect_all_reduce(run_job({kPython, kScripts + "/allreduce.py", "worker", out}, true), out);
}

// One task per node acting as torchrun: its parser reads PET_* and it starts one
// process per card, each a rank of the 4.
TEST_F(ClusterLaunch, AllReduceWithOneLauncherTaskPerNode) {
  const std::string out = c.root() + "/out";
  std::filesystem::create_directories(out);
  expect_all_reduce(run_job({kPython, kScripts + "/allreduce.py", "launch", out}, false), out);
}

}  // namespace
