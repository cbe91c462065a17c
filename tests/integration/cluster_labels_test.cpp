// Node labels and job node constraints with the real scheduler and agents (issue 32):
// three agents on fake hl-smi (8 HL-225 cards each) labelled from their command line;
// jobs with node_selector, nodelist and exclude land where they must, an unmatched
// selector waits naming it until an admin labels a node, and the admins' label and
// the agents' survive a scheduler restart. Topology (ClusterTopology): a gang that
// requires one rack waits for it across a scheduler restart and then takes it; with
// --topology-key rack a gang prefers one rack, before and after a restart.
#include <gtest/gtest.h>

#include <set>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A node's labels (GET /v1/nodes/{name}) but the scheduler's own, after checking that
// tessel.io/images=true is there exactly when its agent runs images (this host may have
// podman or not).
json labels_of(const json& node) {
  json labels = node["labels"];
  const bool images = !node["inventory"].value("containers", "").empty();
  EXPECT_EQ(labels.contains("tessel.io/images"), images) << node.dump();
  if (images) EXPECT_EQ(labels["tessel.io/images"], "true");
  labels.erase("tessel.io/images");
  return labels;
}

// The nodes a finished job ran on.
std::set<std::string> ran_on(const json& job) {
  std::set<std::string> out;
  for (const auto& a : job["allocations"]) out.insert(a["node"].get<std::string>());
  return out;
}

// Runs `spec` (a short command) to its end; the nodes it ran on, or {} with a failure.
std::set<std::string> run(Cluster& c, json spec) {
  spec["command"] = {"/bin/true"};
  const json job = c.submit(spec);
  auto done = c.wait_job(job.value("id", ""), {"succeeded", "failed"});
  if (!done) return {};
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  return ran_on(*done);
}

void start_labelled(Cluster& c, const std::string& node, std::vector<std::string> labels) {
  c.agent_args.clear();
  for (const auto& l : labels) c.agent_args.insert(c.agent_args.end(), {"--label", l});
  c.start_agent(node);
}

TEST(ClusterLabels, SelectorNodelistAndExcludeWithRealAgentsAcrossARestart) {
  Cluster c;
  c.start_scheduler();
  start_labelled(c, "n1", {"rack=r1"});
  start_labelled(c, "n2", {"rack=r2", "fabric=ib"});
  start_labelled(c, "n3", {"rack=r2"});
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
  EXPECT_EQ(labels_of(c.get("/v1/nodes/n2")), json({{"fabric", "ib"}, {"rack", "r2"}}));

  // Whole nodes, so each job's node is decided by its constraint alone.
  EXPECT_EQ(run(c, {{"devices", 8}, {"node_selector", {{"rack", "r2"}, {"fabric", "ib"}}}}),
            std::set<std::string>{"n2"});
  EXPECT_EQ(run(c, {{"devices", 8}, {"node_selector", {{"rack", "r1"}}}}), std::set<std::string>{"n1"});
  EXPECT_EQ(run(c, {{"devices", 8}, {"nodelist", {"n3"}}}), std::set<std::string>{"n3"});
  EXPECT_EQ(run(c, {{"devices", 8}, {"exclude", {"n1", "n2"}}}), std::set<std::string>{"n3"});
  const auto gang = run(c, {{"devices", 8}, {"nodes", 2}, {"nodelist", {"n1"}}, {"exclude", {"n3"}}});
  EXPECT_EQ(gang, (std::set<std::string>{"n1", "n2"}));

  // Unknown nodes are a 400 naming the entry.
  auto bad = c.rest().post("/v1/jobs", {{"command", {"/bin/true"}}, {"nodelist", {"n9"}}});
  EXPECT_EQ(bad.status, 400) << bad.text;
  EXPECT_EQ(bad.body["error"]["field"], "nodelist[0]") << bad.text;

  // No node in rack r9: the job waits naming it, until an admin puts n1 there.
  const std::string r9 =
      c.submit({{"command", {"/bin/true"}}, {"devices", 1}, {"node_selector", {{"rack", "r9"}}}})["id"];
  ASSERT_TRUE(c.wait_reason(r9, "no ready node with rack=r9"));
  auto put = c.rest().put("/v1/nodes/n1/labels", {{"labels", {{"rack", "r9"}}}});
  ASSERT_EQ(put.status, 200) << put.text;
  auto done = c.wait_job(r9, {"succeeded", "failed"});
  ASSERT_TRUE(done);
  EXPECT_EQ(ran_on(*done), std::set<std::string>{"n1"});

  // A restart keeps the admins' label (stored) and the agents' (they register again).
  c.stop_scheduler();
  c.start_scheduler();
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
  const json n1 = c.get("/v1/nodes/n1");
  EXPECT_EQ(n1["admin_labels"], json({{"rack", "r9"}})) << n1.dump();
  EXPECT_EQ(labels_of(n1), json({{"rack", "r9"}})) << n1.dump();
  EXPECT_EQ(n1["inventory"]["labels"], json({{"rack", "r1"}})) << n1.dump();
  EXPECT_EQ(run(c, {{"devices", 8}, {"node_selector", {{"rack", "r9"}}}}), std::set<std::string>{"n1"});
  EXPECT_EQ(run(c, {{"devices", 8}, {"node_selector", {{"fabric", "ib"}}}}), std::set<std::string>{"n2"});
  // Removing the admins' label shows the agent's again.
  ASSERT_EQ(c.rest().put("/v1/nodes/n1/labels", {{"labels", {{"rack", nullptr}}}}).status, 200);
  EXPECT_EQ(labels_of(c.get("/v1/nodes/n1")), json({{"rack", "r1"}}));
}

// n1 in rack r1, n2 and n3 in rack r2; the scheduler's topology key is rack.
void start_racks(Cluster& c) {
  c.scheduler_args = {"--topology-key", "rack"};
  c.start_scheduler();
  start_labelled(c, "n1", {"rack=r1"});
  start_labelled(c, "n2", {"rack=r2"});
  start_labelled(c, "n3", {"rack=r2"});
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
}

TEST(ClusterTopology, AGangWaitsForOneRackThenTakesItAcrossARestart) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(start_racks(c));
  // n3 busy: n1 and n2 are free, but in two racks.
  const std::string blocker =
      c.submit({{"command", {"/bin/sleep", "600"}}, {"devices", 8}, {"nodelist", {"n3"}}})["id"];
  ASSERT_TRUE(c.wait_job(blocker, {"running"}));
  const json gang =
      c.submit({{"command", {"/bin/true"}}, {"devices", 8}, {"nodes", 2}, {"topology", {{"required", "rack"}}}});
  const std::string id = gang["id"];
  ASSERT_TRUE(c.wait_reason(id, "waiting for 2 nodes with one rack value"));
  EXPECT_EQ(c.get("/v1/jobs/" + id)["spec"]["topology"], json({{"required", "rack"}}));
  // The topology is stored with the job: after a restart it still waits for one rack.
  c.stop_scheduler();
  c.start_scheduler();
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
  ASSERT_TRUE(c.wait_reason(id, "waiting for 2 nodes with one rack value"));
  EXPECT_EQ(c.post("/v1/jobs/" + blocker + "/cancel", json::object()) / 100, 2);
  auto done = c.wait_job(id, {"succeeded", "failed"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump();
  EXPECT_EQ(ran_on(*done), (std::set<std::string>{"n2", "n3"}));
  // A bad topology is a 400 naming the field.
  auto bad = c.rest().post("/v1/jobs", {{"command", {"/bin/true"}}, {"topology", {{"required", "-rack"}}}});
  EXPECT_EQ(bad.status, 400) << bad.text;
  EXPECT_EQ(bad.body["error"]["field"], "topology.required") << bad.text;
}

TEST(ClusterTopology, AGangPrefersOneRackBeforeAndAfterARestart) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(start_racks(c));
  // Plain placement would take n1 and n2 (the lowest numbers); one rack holds two: r2.
  EXPECT_EQ(run(c, {{"devices", 4}, {"nodes", 2}}), (std::set<std::string>{"n2", "n3"}));
  EXPECT_EQ(run(c, {{"devices", 4}, {"nodes", 2}, {"topology", {{"preferred", "rack"}}}}),
            (std::set<std::string>{"n2", "n3"}));
  // Three nodes: no rack has them; preferred falls back to any nodes.
  EXPECT_EQ(run(c, {{"devices", 4}, {"nodes", 3}}), (std::set<std::string>{"n1", "n2", "n3"}));
  c.stop_scheduler();
  c.start_scheduler();
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
  EXPECT_EQ(run(c, {{"devices", 4}, {"nodes", 2}}), (std::set<std::string>{"n2", "n3"}));
}

TEST(ClusterTopology, ABadTopologyKeyStopsTheScheduler) {
  Cluster c;
  auto r =
      tessel::testkit::run_process(tessel::testkit::command({TESSEL_SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--db",
                                                             c.root() + "/bad.db", "--topology-key", "rack,-leaf"}),
                                   20s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--topology-key"), std::string::npos) << r.err;
}

TEST(ClusterLabels, AnAgentWithABadLabelRefusesToStart) {
  Cluster c;
  c.start_scheduler();
  auto r = tessel::testkit::run_process(
      tessel::testkit::command({TESSEL_AGENT_BIN, "--scheduler", "http://127.0.0.1:" + std::to_string(c.port()),
                                "--node", "nx", "--state-dir", c.root() + "/nx", "--label", "rack=r 7"}),
      20s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--label"), std::string::npos) << r.err;
}

}  // namespace
