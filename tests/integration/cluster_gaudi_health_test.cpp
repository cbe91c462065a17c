// Gaudi health end to end: the real scheduler and two agents on the fake hl-smi, one
// of them with a NIC port down (FAKE_HL_SMI_PORTS_DOWN). A two-node gang waits and
// says which node's ports are down; a single-node job still runs on that node; the
// node's driver and firmware versions reach the API and the job constraint.
#include <gtest/gtest.h>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

class ClusterGaudiHealth : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_agent("n1", "gaudi2-hl225-8-fw.csv");
    c.start_agent("n2", "gaudi2-hl225-8-fw.csv", {{"FAKE_HL_SMI_PORTS_DOWN", "5:1"}});
    ASSERT_TRUE(c.wait_node_state("n1", "ready"));
    ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  }
  Cluster c;
};

TEST_F(ClusterGaudiHealth, GangWaitsWithTheReasonAndSingleNodeJobRunsOnTheNode) {
  json n2 = c.get("/v1/nodes/n2");
  const json& dev = n2["inventory"]["devices"][6];  // Index 6 carries module 5 in this fixture.
  ASSERT_EQ(dev["module_id"], 5) << n2.dump();
  EXPECT_EQ(dev["ports_down"], json::array({1}));
  EXPECT_EQ(dev["ports_up"], 2);
  EXPECT_EQ(dev["firmware_version"], "hl-gaudi2-1.17.0-fw-51.2.0-sec-9");
  EXPECT_EQ(n2["inventory"]["driver_version"], "1.17.0-e4d8f8b");
  json n1 = c.get("/v1/nodes/n1");
  EXPECT_FALSE(n1["inventory"].contains("ports_error")) << n1.dump();
  for (const json& d : n1["inventory"]["devices"]) EXPECT_EQ(d["ports_up"], 3) << d.dump();

  auto gang = c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"nodes", 2}});
  auto waiting = c.wait_reason(gang["id"], "node n2: ports down on module 5");
  ASSERT_TRUE(waiting);
  EXPECT_EQ((*waiting)["state"], "pending");

  ASSERT_EQ(c.post("/v1/nodes/n1/drain", json::object()), 200);  // Only n2 is left for a single-node job.
  auto single = c.submit({{"command", {"/bin/true"}}, {"devices", 8}, {"driver_version", "1.17.0"}});
  auto done = c.wait_job(single["id"], {"succeeded", "failed"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  EXPECT_EQ((*done)["allocations"][0]["node"], "n2");
  EXPECT_EQ(c.get("/v1/jobs/" + gang["id"].get<std::string>())["state"], "pending");
}

TEST_F(ClusterGaudiHealth, DriverVersionConstraintNoNodeMeets) {
  auto job = c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"driver_version", "1.18"}});
  ASSERT_TRUE(c.wait_reason(job["id"], "driver_version 1.18"));
}

}  // namespace
