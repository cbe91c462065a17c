// torchrun's own argument parser (Debian's python3-torch) on the environment that
// task_environment() computes for each node of a two-node job: no flags needed.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "tessel/agent/task_env.hpp"

using namespace tessel;
using agent::Env;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

api::Assignment two_node_assignment(int node_rank, bool per_device) {
  api::Assignment a;
  a.job_id = "j-00000007";
  a.node_rank = node_rank;
  a.nnodes = 2;
  a.id = api::assignment_id(a.job_id, a.attempt, a.node_rank);
  a.module_ids = {4, 5, 6, 7};
  a.indices = {7, 6, 3, 5};
  a.master_addr = "10.20.30.40";
  a.master_port = 29611;
  a.spec.command = {"torchrun", "train.py"};
  a.spec.devices = 4;
  a.spec.nodes = 2;
  a.spec.task_per_device = per_device;
  return a;
}

// The agent's environment for local rank `local` of `a` (base: this process's allow-listed variables).
Env tessel_env(const api::Assignment& a, int local = 0) {
  api::NodeInventory inv;
  inv.vendor = api::Vendor::habana;
  const Env base = agent::minimal_base_env([](const std::string& k) -> std::optional<std::string> {
    const char* v = std::getenv(k.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
  auto env = agent::task_environment({a, inv, base, "n" + std::to_string(a.node_rank + 1), local, 40000});
  EXPECT_TRUE(env.ok()) << env.error().message;
  return env.ok() ? *env : Env{};
}

// What torchrun resolves from `env` alone (exactly that environment), with `flags` before the script.
json torchrun_view(const Env& env, const std::vector<std::string>& flags = {}) {
  testkit::ChildOptions o;
  o.argv = {TESSEL_PYTHON3, std::string(TESSEL_LAUNCHERS_DIR) + "/torchrun_args.py"};
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.env = env;
  o.inherit_env = false;
  auto r = testkit::run_process(o, 120s);
  EXPECT_EQ(r.exit_code, 0) << TESSEL_PYTHON3 << " needs Debian's python3-torch (scripts/setup.sh installs it)\n"
                            << r.err;
  const std::string marker = "torchrun-args: ";
  const auto at = r.out.find(marker);
  if (at == std::string::npos) return json();
  return json::parse(r.out.substr(at + marker.size(), r.out.find('\n', at) - at - marker.size()), nullptr, false);
}

TEST(TorchrunEnv, EachNodeOfATwoNodeJobNeedsNoFlags) {
  for (int node = 0; node < 2; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    json v = torchrun_view(tessel_env(two_node_assignment(node, false)));
    ASSERT_TRUE(v.is_object()) << v.dump();
    EXPECT_EQ(v["nnodes"], "2");
    EXPECT_EQ(v["node_rank"], node);
    EXPECT_EQ(v["master_addr"], "10.20.30.40");
    EXPECT_EQ(v["master_port"], 29611);
    EXPECT_EQ(v["nproc_per_node"], "4");
    // The launch torchrun would make: a static rendezvous of exactly 2 nodes at rank 0's node.
    EXPECT_EQ(v["rdzv_backend"], "static");
    EXPECT_EQ(v["rdzv_endpoint"], "10.20.30.40:29611");
    EXPECT_EQ(v["min_nodes"], 2);
    EXPECT_EQ(v["max_nodes"], 2);
    EXPECT_EQ(v["launch_nproc_per_node"], 4);
    EXPECT_EQ(v["launch_node_rank"], node);
  }
}

TEST(TorchrunEnv, FlagsOnTheCommandLineStillWin) {
  json v = torchrun_view(tessel_env(two_node_assignment(1, false)), {"--nproc_per_node", "2"});
  ASSERT_TRUE(v.is_object()) << v.dump();
  EXPECT_EQ(v["nproc_per_node"], "2");
  EXPECT_EQ(v["nnodes"], "2");
  EXPECT_EQ(v["node_rank"], 1);
}

// With tasks_per_node "device" every task is already one rank: Tessel sets no PET_*,
// so a launcher started there sees only its defaults (a single node of its own).
TEST(TorchrunEnv, TaskPerDeviceTasksAreRanksNotLaunchers) {
  Env env = tessel_env(two_node_assignment(1, true), 2);
  EXPECT_EQ(env.at("RANK"), "6");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  json v = torchrun_view(env);
  ASSERT_TRUE(v.is_object()) << v.dump();
  EXPECT_EQ(v["nnodes"], "1:1");
  EXPECT_EQ(v["node_rank"], 0);
  EXPECT_EQ(v["nproc_per_node"], "1");
}

}  // namespace
