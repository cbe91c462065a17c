#include "tessel/agent/task_env.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using agent_test::gaudi_assignment;

namespace {

api::NodeInventory gaudi_inv() {
  api::NodeInventory inv;
  inv.vendor = api::Vendor::habana;
  return inv;
}

Env base() { return {{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}}; }

TEST(TaskEnv, GaudiPairUsesModulesAndMatchingIndices) {
  auto a = gaudi_assignment({2, 3}, {2, 1});
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n1", 0, 4242});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->at("HABANA_VISIBLE_MODULES"), "2,3");
  EXPECT_EQ(env->at("HABANA_VISIBLE_DEVICES"), "2,1");
  EXPECT_EQ(env->at("PT_ENABLE_INT64_SUPPORT"), "1");
  EXPECT_EQ(env->at("RANK"), "0");
  EXPECT_EQ(env->at("WORLD_SIZE"), "1");
  EXPECT_EQ(env->at("LOCAL_RANK"), "0");
  EXPECT_EQ(env->at("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(env->at("NODE_RANK"), "0");
  EXPECT_EQ(env->at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(env->at("MASTER_PORT"), "29500");
  EXPECT_EQ(env->at("TESSEL_JOB_ID"), "j1");
  EXPECT_EQ(env->at("TESSEL_NODE"), "n1");
  EXPECT_EQ(env->at("TESSEL_PORT"), "4242");
  EXPECT_EQ(env->at("PATH"), "/usr/bin:/bin");
  EXPECT_EQ(env->count("HLS_MODULE_ID"), 0u);
}

TEST(TaskEnv, APreemptedJobSeesTesselPreempted) {
  auto a = gaudi_assignment({0}, {4});
  auto inv = gaudi_inv();
  Env b = base();
  auto first = task_environment({a, inv, b, "n1", 0, 1});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->count("TESSEL_PREEMPTED"), 0u);
  a.preemptions = 1;
  auto again = task_environment({a, inv, b, "n1", 0, 1});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at("TESSEL_PREEMPTED"), "1");
}

TEST(TaskEnv, JobEnvCannotOverrideOwnedVariablesButKeepsInt64Choice) {
  auto a = gaudi_assignment({0}, {4});
  a.spec.env = {{"HABANA_VISIBLE_MODULES", "7"},
                {"RANK", "9"},
                {"PT_ENABLE_INT64_SUPPORT", "0"},
                {"MY", "x"},
                {"PATH", "/opt/bin"}};
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n1", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("HABANA_VISIBLE_MODULES"), "0");
  EXPECT_EQ(env->at("HABANA_VISIBLE_DEVICES"), "4");
  EXPECT_EQ(env->at("RANK"), "0");
  EXPECT_EQ(env->at("PT_ENABLE_INT64_SUPPORT"), "0");
  EXPECT_EQ(env->at("MY"), "x");
  EXPECT_EQ(env->at("PATH"), "/opt/bin");
}

TEST(TaskEnv, TaskPerDeviceRanksAndModuleIds) {
  auto a = gaudi_assignment({4, 5, 6, 7}, {7, 6, 3, 0});
  a.spec.task_per_device = true;
  a.node_rank = 1;
  a.nnodes = 2;
  auto inv = gaudi_inv();
  Env b = base();
  EXPECT_EQ(local_world_size(a), 4);
  auto env = task_environment({a, inv, b, "n2", 2, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("HABANA_VISIBLE_MODULES"), "4,5,6,7");
  EXPECT_EQ(env->at("HABANA_VISIBLE_DEVICES"), "7,6,3,0");
  EXPECT_EQ(env->at("HLS_MODULE_ID"), "6");
  EXPECT_EQ(env->at("LOCAL_RANK"), "2");
  EXPECT_EQ(env->at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(env->at("RANK"), "6");
  EXPECT_EQ(env->at("WORLD_SIZE"), "8");
  EXPECT_EQ(env->at("NODE_RANK"), "1");
  EXPECT_FALSE(task_environment({a, inv, b, "n2", 4, 1}).ok());
}

TEST(TaskEnv, GangOneTaskPerNode) {
  auto a = gaudi_assignment({0, 1, 2, 3, 4, 5, 6, 7}, {4, 0, 2, 1, 7, 6, 3, 5});
  a.node_rank = 1;
  a.nnodes = 2;
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n2", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("RANK"), "1");
  EXPECT_EQ(env->at("WORLD_SIZE"), "2");
  EXPECT_EQ(env->at("LOCAL_WORLD_SIZE"), "1");
}

TEST(TaskEnv, OneTaskPerNodeGetsLauncherVariables) {
  auto a = gaudi_assignment({0, 1, 2, 3}, {4, 0, 2, 1});
  a.node_rank = 1;
  a.nnodes = 3;
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n2", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("PET_NNODES"), "3");
  EXPECT_EQ(env->at("PET_NODE_RANK"), "1");
  EXPECT_EQ(env->at("PET_MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(env->at("PET_MASTER_PORT"), "29500");
  EXPECT_EQ(env->at("PET_NPROC_PER_NODE"), "4");
}

TEST(TaskEnv, LauncherVariablesKeepTheJobsOwnAndNeedOneProcessWithoutCards) {
  auto a = gaudi_assignment({}, {});
  a.spec.env = {{"PET_NPROC_PER_NODE", "3"}};
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n1", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("PET_NPROC_PER_NODE"), "3");
  EXPECT_EQ(env->at("PET_NNODES"), "1");
  auto none = gaudi_assignment({}, {});
  auto env0 = task_environment({none, inv, b, "n1", 0, 1});
  ASSERT_TRUE(env0.ok());
  EXPECT_EQ(env0->at("PET_NPROC_PER_NODE"), "1");
}

TEST(TaskEnv, TaskPerDeviceSetsNoLauncherVariables) {
  auto a = gaudi_assignment({0, 1}, {4, 0});
  a.spec.task_per_device = true;
  a.nnodes = 2;
  auto inv = gaudi_inv();
  Env b = base();
  for (int local = 0; local < 2; ++local) {
    auto env = task_environment({a, inv, b, "n1", local, 1});
    ASSERT_TRUE(env.ok());
    for (const auto& [k, v] : *env) EXPECT_NE(k.rfind("PET_", 0), 0u) << k << "=" << v;
  }
}

TEST(TaskEnv, NvidiaUsesUuidsByIndex) {
  api::NodeInventory inv;
  inv.vendor = api::Vendor::nvidia;
  for (int i = 0; i < 4; ++i) {
    api::Device d;
    d.index = d.module_id = i;
    d.uuid = "GPU-" + std::to_string(i);
    inv.devices.push_back(d);
  }
  auto a = gaudi_assignment({1, 3}, {1, 3});
  Env b = base();
  auto env = task_environment({a, inv, b, "g", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("CUDA_VISIBLE_DEVICES"), "GPU-1,GPU-3");
  EXPECT_EQ(env->count("HABANA_VISIBLE_MODULES"), 0u);
  EXPECT_EQ(env->count("PT_ENABLE_INT64_SUPPORT"), 0u);
  auto missing = gaudi_assignment({5}, {5});
  auto bad = task_environment({missing, inv, b, "g", 0, 1});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("index 5"), std::string::npos);
}

TEST(TaskEnv, NoCardsHidesAll) {
  auto a = gaudi_assignment({}, {});
  auto inv = gaudi_inv();
  Env b = base();
  auto env = task_environment({a, inv, b, "n", 0, 1});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->at("HABANA_VISIBLE_MODULES"), "");
  EXPECT_EQ(local_world_size(a), 1);
}

TEST(TaskEnv, MinimalBaseEnvPicksAllowList) {
  std::map<std::string, std::string> proc = {{"PATH", "/p"}, {"HOME", "/h"}, {"SECRET", "s"}, {"USER", "root"}};
  auto get = [&](const std::string& k) -> std::optional<std::string> {
    auto it = proc.find(k);
    return it == proc.end() ? std::nullopt : std::optional(it->second);
  };
  Env e = minimal_base_env(get);
  EXPECT_EQ(e.at("PATH"), "/p");
  EXPECT_EQ(e.count("SECRET"), 0u);
  Env u = minimal_base_env(get, std::string("alice"), std::string("/home/alice"));
  EXPECT_EQ(u.at("USER"), "alice");
  EXPECT_EQ(u.at("LOGNAME"), "alice");
  EXPECT_EQ(u.at("HOME"), "/home/alice");
}

}  // namespace

namespace {

TEST(TaskEnv, ArrayElementsKnowTheirArray) {
  auto a = gaudi_assignment({0}, {0});
  a.job_id = "j-00000042_7";
  a.spec.array = api::ArraySpec{100, 8};
  auto env = task_environment({a, gaudi_inv(), base(), "n1", 0, 4242});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->at("TESSEL_JOB_ID"), "j-00000042_7");
  EXPECT_EQ(env->at("TESSEL_ARRAY_ID"), "j-00000042");
  EXPECT_EQ(env->at("TESSEL_ARRAY_INDEX"), "7");
  EXPECT_EQ(env->at("TESSEL_ARRAY_COUNT"), "100");
  EXPECT_EQ(env->at("TESSEL_ARRAY_MIN"), "0");
  EXPECT_EQ(env->at("TESSEL_ARRAY_MAX"), "99");
  // Indices as submitted: the element's own index, and the list's ends.
  a.job_id = "j-00000042_17";
  a.spec.array = api::ArraySpec{4, 4, "1,3,17-18"};
  env = task_environment({a, gaudi_inv(), base(), "n1", 0, 4242});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->at("TESSEL_ARRAY_INDEX"), "17");
  EXPECT_EQ(env->at("TESSEL_ARRAY_COUNT"), "4");
  EXPECT_EQ(env->at("TESSEL_ARRAY_MIN"), "1");
  EXPECT_EQ(env->at("TESSEL_ARRAY_MAX"), "18");
  a.job_id = "j-00000042";  // Not an element: no array variables.
  env = task_environment({a, gaudi_inv(), base(), "n1", 0, 4242});
  ASSERT_TRUE(env.ok());
  EXPECT_FALSE(env->count("TESSEL_ARRAY_ID"));
}

}  // namespace
