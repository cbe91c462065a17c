// An AMD Instinct node end to end: the real scheduler and agent, the fake amd-smi
// replaying 8 × MI300X (tests/fixtures/amd-smi). A job sees its cards as ROCr UUIDs.
#include <gtest/gtest.h>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

const char* const kUuids[] = {"GPU-7ef570db1b346018", "GPU-6be2ee3b2b314cfc", "GPU-1b8ae5f41e1bd1cc",
                              "GPU-2c9bf6052f2ce2dd", "GPU-3dac07164039f3ee", "GPU-4ebd18275140a4ff",
                              "GPU-5fce29386251b500", "GPU-60df3a497362c611"};

class ClusterAmd : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_vendor_agent(
        "mi1", "amd", {"--amd-smi", FAKE_AMD_SMI_BIN},
        {{"FAKE_AMD_SMI_FIXTURE", std::string(TESSEL_FIXTURES_DIR) + "/amd-smi/mi300x-8-static-gpu-data.json"}});
    ASSERT_TRUE(c.wait_node_state("mi1", "ready"));
  }
  Cluster c;
};

TEST_F(ClusterAmd, NodeReportsAmdInventory) {
  json node = c.get("/v1/nodes/mi1");
  EXPECT_EQ(node["inventory"]["vendor"], "amd") << node.dump();
  ASSERT_EQ(node["inventory"]["devices"].size(), 8u);
  EXPECT_EQ(node["inventory"]["devices"][3]["uuid"], kUuids[3]);
}

TEST_F(ClusterAmd, JobGetsRocrUuidsOfItsCards) {
  for (int devices : {1, 2, 4, 8}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    json spec = {
        {"command", {"/usr/bin/env"}}, {"devices", devices}, {"vendor", "amd"}, {"model", "AMD Instinct MI300X"}};
    auto job = c.submit(spec);
    auto done = c.wait_job(job["id"], {"succeeded", "failed"});
    ASSERT_TRUE(done);
    ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
    std::vector<int> idx = (*done)["allocations"][0]["indices"];
    ASSERT_EQ(static_cast<int>(idx.size()), devices);
    std::string rocr, hip;
    for (size_t i = 0; i < idx.size(); ++i) {
      rocr += (i ? "," : "") + std::string(kUuids[idx[i]]);
      hip += (i ? "," : "") + std::to_string(i);
    }
    auto env = parse_env_dump(c.log("mi1", job["id"]));
    EXPECT_EQ(env["ROCR_VISIBLE_DEVICES"], rocr);
    EXPECT_EQ(env["HIP_VISIBLE_DEVICES"], hip);
    EXPECT_EQ(env["TESSEL_DEVICE_TYPE"], "cuda");
    EXPECT_EQ(env["TESSEL_DIST_BACKEND"], "nccl");
    EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
    EXPECT_EQ(env.count("HABANA_VISIBLE_MODULES"), 0u);
  }
}

TEST_F(ClusterAmd, JobForAnotherVendorWaits) {
  auto job = c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"vendor", "habana"}});
  auto j = c.wait_reason(job["id"], "habana");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["state"], "pending");
}

}  // namespace
