// A Huawei Ascend node end to end: the real scheduler and agent, the fake npu-smi
// replaying a real Atlas 800 (8 × 910A) table (tests/fixtures/npu-smi). A job gets a
// group inside one HCCS ring and sees it as ASCEND_RT_VISIBLE_DEVICES.
#include <gtest/gtest.h>

#include <algorithm>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

class ClusterAscend : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_vendor_agent(
        "npu1", "ascend", {"--npu-smi", FAKE_NPU_SMI_BIN},
        {{"FAKE_NPU_SMI_FIXTURE", std::string(TESSEL_FIXTURES_DIR) + "/npu-smi/atlas800-9010-910a-8-info.txt"}});
    ASSERT_TRUE(c.wait_node_state("npu1", "ready"));
  }
  Cluster c;
};

TEST_F(ClusterAscend, NodeReportsAscendInventory) {
  json node = c.get("/v1/nodes/npu1");
  EXPECT_EQ(node["inventory"]["vendor"], "ascend") << node.dump();
  EXPECT_EQ(node["inventory"]["driver_version"], "24.1.RC2");
  ASSERT_EQ(node["inventory"]["devices"].size(), 8u);
  EXPECT_EQ(node["inventory"]["devices"][3]["uuid"], "NPU-0000:01:00.0");
}

TEST_F(ClusterAscend, JobGetsLogicalIdsInsideOneRing) {
  for (int devices : {1, 2, 4, 8}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    json spec = {{"command", {"/usr/bin/env"}}, {"devices", devices}, {"vendor", "ascend"}, {"model", "xxx"}};
    auto job = c.submit(spec);
    auto done = c.wait_job(job["id"], {"succeeded", "failed"});
    ASSERT_TRUE(done);
    ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
    std::vector<int> idx = (*done)["allocations"][0]["indices"];
    ASSERT_EQ(static_cast<int>(idx.size()), devices);
    std::sort(idx.begin(), idx.end());
    if (devices <= 4) EXPECT_EQ(idx.front() / 4, idx.back() / 4) << "spans both HCCS rings";
    std::string ids;
    for (size_t i = 0; i < idx.size(); ++i) ids += (i ? "," : "") + std::to_string(idx[i]);
    auto env = parse_env_dump(c.log("npu1", job["id"]));
    EXPECT_EQ(env["ASCEND_RT_VISIBLE_DEVICES"], ids);
    EXPECT_EQ(env["TESSEL_DEVICE_TYPE"], "npu");
    EXPECT_EQ(env["TESSEL_DIST_BACKEND"], "hccl");
    EXPECT_EQ(env.count("HABANA_VISIBLE_MODULES"), 0u);
    EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
  }
}

TEST_F(ClusterAscend, JobForAnotherVendorWaits) {
  auto job = c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"vendor", "amd"}});
  auto j = c.wait_reason(job["id"], "amd");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["state"], "pending");
}

}  // namespace
