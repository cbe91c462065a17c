// An AWS Trainium node end to end: the real scheduler and agent, the fake neuron-ls
// replaying a trn2.48xlarge (16 devices of 4 logical NeuronCores, tests/fixtures/neuron-ls).
// A job gets an aligned block of 1, 4, 8 or 16 devices and sees it as one contiguous
// NEURON_RT_VISIBLE_CORES range.
#include <gtest/gtest.h>

#include <algorithm>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

class ClusterNeuron : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_vendor_agent(
        "trn1", "neuron", {"--neuron-ls", FAKE_NEURON_LS_BIN},
        {{"FAKE_NEURON_LS_FIXTURE", std::string(TESSEL_FIXTURES_DIR) + "/neuron-ls/trn2-48xlarge-16.json"}});
    ASSERT_TRUE(c.wait_node_state("trn1", "ready"));
  }
  Cluster c;
};

TEST_F(ClusterNeuron, NodeReportsNeuronInventory) {
  json node = c.get("/v1/nodes/trn1");
  EXPECT_EQ(node["inventory"]["vendor"], "neuron") << node.dump();
  ASSERT_EQ(node["inventory"]["devices"].size(), 16u);
  EXPECT_EQ(node["inventory"]["devices"][15]["uuid"], "NEURON-f7:00.0");
  EXPECT_EQ(node["inventory"]["devices"][15]["cores"], 4);
  EXPECT_EQ(node["inventory"]["groups"]["16"].size(), 1u);
}

TEST_F(ClusterNeuron, JobGetsAContiguousCoreRange) {
  for (int devices : {1, 4, 8, 16}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    json spec = {{"command", {"/usr/bin/env"}}, {"devices", devices}, {"vendor", "neuron"}};
    auto job = c.submit(spec);
    auto done = c.wait_job(job["id"], {"succeeded", "failed"});
    ASSERT_TRUE(done);
    ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
    std::vector<int> idx = (*done)["allocations"][0]["indices"];
    ASSERT_EQ(static_cast<int>(idx.size()), devices);
    std::sort(idx.begin(), idx.end());
    EXPECT_EQ(idx.front() % devices, 0) << "not an aligned block";
    EXPECT_EQ(idx.back() - idx.front() + 1, devices) << "not contiguous";
    const int first = idx.front() * 4, last = idx.back() * 4 + 3;
    auto env = parse_env_dump(c.log("trn1", job["id"]));
    EXPECT_EQ(env["NEURON_RT_VISIBLE_CORES"], std::to_string(first) + "-" + std::to_string(last));
    EXPECT_EQ(env["TESSEL_DEVICE_TYPE"], "neuron");
    EXPECT_EQ(env["TESSEL_DIST_BACKEND"], "xla");
    EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
  }
}

TEST_F(ClusterNeuron, TwoDevicesIsNoTrainiumGroup) {
  auto job = c.submit({{"command", {"/bin/true"}}, {"devices", 2}, {"vendor", "neuron"}});
  auto j = c.wait_reason(job["id"], "no node has 2 healthy neuron cards");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["state"], "pending") << j->dump();
}

}  // namespace
