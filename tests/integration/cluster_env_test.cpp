// What each task sees: the real scheduler + agents, fake hl-smi whose index order
// differs from module order (gaudi2-hl225-8: indices 0..7 carry modules 1,3,2,6,0,7,5,4).
#include <gtest/gtest.h>

#include <httplib.h>

#include <set>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::map<int, int> kModuleToIndex = {{0, 4}, {1, 0}, {2, 2}, {3, 1}, {4, 7}, {5, 6}, {6, 3}, {7, 5}};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

json env_job(int devices, int nodes = 1, bool per_device = false) {
  json spec = {{"command", {"/usr/bin/env"}}, {"devices", devices}, {"nodes", nodes}};
  if (per_device) spec["tasks_per_node"] = "device";
  return spec;
}

class ClusterEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_agent("n1");
  }
  Cluster c;
};

TEST_F(ClusterEnv, GroupSizesGetModulesAndMatchingIndices) {
  for (int devices : {1, 2, 4, 8}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    auto job = c.submit(env_job(devices));
    auto done = c.wait_job(job["id"], {"succeeded", "failed"});
    ASSERT_TRUE(done);
    ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
    auto alloc = (*done)["allocations"][0];
    std::vector<int> mods = alloc["module_ids"], idx = alloc["indices"];
    ASSERT_EQ(static_cast<int>(mods.size()), devices);
    ASSERT_TRUE(std::is_sorted(mods.begin(), mods.end()));
    for (size_t i = 0; i < mods.size(); ++i) EXPECT_EQ(idx[i], kModuleToIndex.at(mods[i]));
    auto env = parse_env_dump(c.log("n1", job["id"]));
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], join(mods));
    EXPECT_EQ(env["HABANA_VISIBLE_DEVICES"], join(idx));
    EXPECT_EQ(env["PT_ENABLE_INT64_SUPPORT"], "1");
    EXPECT_EQ(env["RANK"], "0");
    EXPECT_EQ(env["WORLD_SIZE"], "1");
    EXPECT_EQ(env["LOCAL_RANK"], "0");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "1");
    EXPECT_EQ(env["NODE_RANK"], "0");
    EXPECT_EQ(env["TESSEL_JOB_ID"], job["id"]);
    EXPECT_EQ(env["TESSEL_NODE"], "n1");
    EXPECT_EQ(env["MASTER_ADDR"], (*done)["master_addr"]);
    EXPECT_EQ(env["MASTER_PORT"], std::to_string((*done)["master_port"].get<int>()));
    EXPECT_FALSE(env["TESSEL_PORT"].empty());
    EXPECT_EQ(env.count("HLS_MODULE_ID"), 0u);
  }
}

TEST_F(ClusterEnv, TaskPerDevice) {
  auto job = c.submit(env_job(4, 1, true));
  auto done = c.wait_job(job["id"], {"succeeded", "failed"});
  ASSERT_TRUE(done);
  ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
  std::vector<int> mods = (*done)["allocations"][0]["module_ids"];
  for (int i = 0; i < 4; ++i) {
    auto env = parse_env_dump(c.log("n1", job["id"], 0, i));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(i));
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
    EXPECT_EQ(env["RANK"], std::to_string(i));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["HLS_MODULE_ID"], std::to_string(mods[static_cast<size_t>(i)]));
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], join(mods));
  }
}

TEST_F(ClusterEnv, TwoNodeGang) {
  c.start_agent("n2", "gaudi2-hl225-8.csv");
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  auto job = c.submit(env_job(8, 2));
  auto done = c.wait_job(job["id"], {"succeeded", "failed"});
  ASSERT_TRUE(done);
  ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
  std::set<std::string> ranks;
  std::string master;
  for (const auto& a : (*done)["allocations"]) {
    auto env = parse_env_dump(c.log(a["node"], job["id"], a["rank"]));
    ranks.insert(env["RANK"]);
    EXPECT_EQ(env["NODE_RANK"], std::to_string(a["rank"].get<int>()));
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], "0,1,2,3,4,5,6,7");
    EXPECT_EQ(env["HABANA_VISIBLE_DEVICES"], "4,0,2,1,7,6,3,5");
    if (master.empty()) master = env["MASTER_ADDR"] + ":" + env["MASTER_PORT"];
    EXPECT_EQ(env["MASTER_ADDR"] + ":" + env["MASTER_PORT"], master);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}));
}

TEST_F(ClusterEnv, LogsThroughTheScheduler) {
  auto job = c.submit({{"command", {"sh", "-c", "echo hello-logs"}}, {"devices", 1}});
  ASSERT_TRUE(c.wait_job(job["id"], {"succeeded"}));
  httplib::Client h("127.0.0.1", c.port());
  auto r = h.Get(("/v1/jobs/" + job["id"].get<std::string>() + "/logs").c_str());
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("hello-logs"), std::string::npos) << r->status << " " << r->body;
}

}  // namespace
