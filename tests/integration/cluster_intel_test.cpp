// An Intel Data Center GPU node end to end: the real scheduler and agent, the fake
// xpu-smi replaying 4 × Max 1550 (tests/fixtures/xpu-smi). A job sees its cards through
// ZE_AFFINITY_MASK with Level Zero in COMPOSITE mode (one device per card).
#include <gtest/gtest.h>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

class ClusterIntel : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_vendor_agent(
        "xe1", "intel", {"--xpu-smi", FAKE_XPU_SMI_BIN},
        {{"FAKE_XPU_SMI_FIXTURE", std::string(TESSEL_FIXTURES_DIR) + "/xpu-smi/max1550-4-discovery.json"}});
    ASSERT_TRUE(c.wait_node_state("xe1", "ready"));
  }
  Cluster c;
};

TEST_F(ClusterIntel, NodeReportsIntelInventory) {
  json node = c.get("/v1/nodes/xe1");
  EXPECT_EQ(node["inventory"]["vendor"], "intel") << node.dump();
  ASSERT_EQ(node["inventory"]["devices"].size(), 4u);
  EXPECT_EQ(node["inventory"]["devices"][1]["uuid"], "00000000-0000-0042-0000-002f0bd58086");
  EXPECT_EQ(node["inventory"]["groups"], json::parse(R"({"all": true})"));
}

TEST_F(ClusterIntel, JobGetsItsCardsAsAffinityMask) {
  for (int devices : {1, 2, 4}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    json spec = {{"command", {"/usr/bin/env"}},
                 {"devices", devices},
                 {"vendor", "intel"},
                 {"model", "Intel(R) Data Center GPU Max 1550"}};
    auto job = c.submit(spec);
    auto done = c.wait_job(job["id"], {"succeeded", "failed"});
    ASSERT_TRUE(done);
    ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
    std::vector<int> idx = (*done)["allocations"][0]["indices"];
    ASSERT_EQ(static_cast<int>(idx.size()), devices);
    std::string mask;
    for (size_t i = 0; i < idx.size(); ++i) mask += (i ? "," : "") + std::to_string(idx[i]);
    auto env = parse_env_dump(c.log("xe1", job["id"]));
    EXPECT_EQ(env["ZE_AFFINITY_MASK"], mask);
    EXPECT_EQ(env["ZE_FLAT_DEVICE_HIERARCHY"], "COMPOSITE");
    EXPECT_EQ(env["TESSEL_DEVICE_TYPE"], "xpu");
    EXPECT_EQ(env["TESSEL_DIST_BACKEND"], "xccl");
    EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
    EXPECT_EQ(env.count("HABANA_VISIBLE_MODULES"), 0u);
  }
}

TEST_F(ClusterIntel, JobForAnotherVendorWaits) {
  auto job = c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"vendor", "neuron"}});
  auto j = c.wait_reason(job["id"], "neuron");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["state"], "pending");
}

}  // namespace
