// Node labels and job node constraints in the scheduler (issue 32): the agent's labels
// from registration, admins' labels stored (winning, surviving a restart, not changed
// by a failed write), PUT /v1/nodes/{name}/labels's errors and roles, unknown nodes in
// nodelist/exclude refused on every submit path, passes that honour the selector, and
// image jobs kept to nodes that run images (issue 29).
#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

void register_labelled(ClusterState& state, const std::string& name, api::Labels labels) {
  api::RegisterRequest r;
  r.node = name;
  r.address = "10.0.0.1";
  r.inventory = gaudi_cards();
  r.inventory.labels = std::move(labels);
  ASSERT_TRUE(state.register_node(r, "").ok());
}

api::LabelChange change(api::Labels set, std::vector<std::string> remove = {}) {
  return api::LabelChange{std::move(set), std::move(remove)};
}

TEST(NodeLabels, AdminLabelsWinAreStoredAndSurviveARestart) {
  const testkit::TempDir dir("tessel-labels");
  const std::string db = dir.str("s.db");
  {
    StateHarness h(db);
    register_labelled(*h.state, "n1", {{"rack", "r1"}, {"fabric", "ib"}});
    register_labelled(*h.state, "n2", {{"rack", "r2"}});
    auto v = h.state->set_node_labels("n1", change({{"rack", "r7"}}));
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(effective_labels(v->rec), (api::Labels{{"fabric", "ib"}, {"rack", "r7"}}));
    EXPECT_EQ(v->rec.labels, (api::Labels{{"rack", "r7"}}));
    // A job for rack r7 goes to n1, whose agent says r1.
    const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}, {"node_selector", {{"rack", "r7"}}}});
    h.state->schedule_pass();
    ASSERT_EQ(h.job(id).allocations.size(), 1u);
    EXPECT_EQ(h.job(id).allocations[0].node, "n1");
    // The agent registering again (restarted) keeps the admins' labels.
    register_labelled(*h.state, "n1", {{"rack", "r1"}});
    EXPECT_EQ(effective_labels(h.state->node("n1")->rec), (api::Labels{{"rack", "r7"}}));
  }
  StateHarness again(db);
  auto n1 = again.state->node("n1");
  ASSERT_TRUE(n1.ok());
  EXPECT_EQ(n1->rec.labels, (api::Labels{{"rack", "r7"}}));
  EXPECT_EQ(n1->rec.inventory.labels, (api::Labels{{"rack", "r1"}}));  // The agent's, as last stored.
  // Removing the admins' label shows the agent's again; placement follows.
  ASSERT_TRUE(again.state->set_node_labels("n1", change({}, {"rack"})).ok());
  EXPECT_EQ(effective_labels(again.state->node("n1")->rec), (api::Labels{{"rack", "r1"}}));
  const std::string r7 = again.submit({{"command", {"x"}}, {"devices", 1}, {"node_selector", {{"rack", "r7"}}}});
  again.state->schedule_pass();
  EXPECT_EQ(again.job(r7).state, api::JobState::pending);
  EXPECT_EQ(again.job(r7).reason, "no ready node with rack=r7");
}

TEST(NodeLabels, AFailedWriteChangesNothing) {
  StateHarness h;
  h.add_node("n1");
  h.store->fail_writes = true;
  auto v = h.state->set_node_labels("n1", change({{"rack", "r7"}}));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::unavailable);
  h.store->fail_writes = false;
  EXPECT_TRUE(h.state->node("n1")->rec.labels.empty());
  EXPECT_EQ(h.state->set_node_labels("ghost", change({{"rack", "r7"}})).error().code, ErrorCode::not_found);
}

TEST(NodeConstraints, UnknownNodesAreRefusedOnEverySubmitPath) {
  StateHarness h;
  h.add_node("n1");
  const json base = {{"command", {"x"}}, {"nodes", 2}};
  for (const json& extra : {json::object(), json{{"array", {{"count", 2}}}}, json{{"after_any", {"j-00000001"}}}}) {
    h.submit({{"command", {"x"}}});  // Something to depend on (j-00000001 and later).
    json spec = base;
    spec.update(extra);
    spec["nodelist"] = {"n1", "n7"};
    auto r = h.try_submit(spec);
    ASSERT_FALSE(r.ok()) << spec.dump();
    EXPECT_EQ(r.error().field, "nodelist[1]");
    EXPECT_EQ(r.error().message, "nodelist: unknown node n7");
    spec.erase("nodelist");
    spec["exclude"] = {"n8"};
    r = h.try_submit(spec);
    ASSERT_FALSE(r.ok()) << spec.dump();
    EXPECT_EQ(r.error().field, "exclude[0]");
  }
}

TEST(NodeConstraints, PassesHonourSelectorNodelistAndExclude) {
  StateHarness h;
  for (const char* n : {"n1", "n2", "n3"}) register_labelled(*h.state, n, {{"rack", n[1] == '3' ? "r2" : "r1"}});
  const std::string sel = h.submit({{"command", {"x"}}, {"devices", 8}, {"node_selector", {{"rack", "r2"}}}});
  const std::string listed = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodelist", {"n2"}}});
  const std::string excl = h.submit({{"command", {"x"}}, {"devices", 8}, {"exclude", {"n2", "n3"}}});
  const std::string wait = h.submit({{"command", {"x"}}, {"devices", 1}, {"node_selector", {{"rack", "r2"}}}});
  h.state->schedule_pass();
  EXPECT_EQ(h.job(sel).allocations.at(0).node, "n3");
  EXPECT_EQ(h.job(listed).allocations.at(0).node, "n2");
  EXPECT_EQ(h.job(excl).allocations.at(0).node, "n1");
  EXPECT_EQ(h.job(wait).state, api::JobState::pending);
  EXPECT_EQ(h.job(wait).reason, "waiting for 1 free cards in one valid group (rack=r2)");
}

// Issue 29: a node whose agent runs images carries tessel.io/images=true; a job with an
// image gets that selector at submission, so it waits (saying why) rather than landing on
// a node that would fail it, and takes the node that runs images.
TEST(NodeConstraints, AnImageJobGoesOnlyToANodeThatRunsImages) {
  StateHarness h;
  register_labelled(*h.state, "n1", {});
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}, {"image", "docker.io/library/debian:12"}});
  EXPECT_EQ(h.job(id).spec.constraints.node_selector, (api::Labels{{"tessel.io/images", "true"}}));
  const std::string bare = h.submit({{"command", {"x"}}, {"devices", 8}});
  h.state->schedule_pass();
  EXPECT_EQ(h.job(bare).state, api::JobState::assigned);
  EXPECT_EQ(h.job(id).state, api::JobState::pending);
  EXPECT_EQ(h.job(id).reason, "no ready node with tessel.io/images=true");

  api::RegisterRequest r;
  r.node = "n2";
  r.address = "10.0.0.2";
  r.inventory = gaudi_cards();
  r.inventory.containers = "podman 4.3.1, runc";
  ASSERT_TRUE(h.state->register_node(r, "").ok());
  EXPECT_EQ(effective_labels(h.state->node("n2")->rec), (api::Labels{{"tessel.io/images", "true"}}));
  EXPECT_TRUE(effective_labels(h.state->node("n1")->rec).empty());
  h.state->schedule_pass();
  ASSERT_EQ(h.job(id).state, api::JobState::assigned);
  EXPECT_EQ(h.job(id).allocations.at(0).node, "n2");
}

TokenTable tokens() { return tokens_from("admintok admin root\nalicetok user alice\nagenttok agent n1\n"); }

void expect_error(const httplib::Result& r, int status, const std::string& code, const std::string& field = "") {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  auto j = Harness::body(r);
  EXPECT_EQ(j["error"]["code"], code) << r->body;
  if (!field.empty()) EXPECT_EQ(j["error"]["field"], field) << r->body;
}

TEST(NodeLabelsApi, PutLabelsErrorsRolesAndViews) {
  Harness h(tokens());
  json inv = gaudi_inventory();
  inv["labels"] = {{"rack", "r1"}, {"fabric", "ib"}};
  auto reg = h.post("/v1/agent/register", {{"node", "n1"}, {"address", "h1"}, {"inventory", inv}}, "agenttok");
  ASSERT_EQ(reg->status, 200) << reg->body;
  auto put = [&](const json& body, const std::string& token, const std::string& node = "n1") {
    return h.client->Put(("/v1/nodes/" + node + "/labels").c_str(), h.auth(token), body.dump(), "application/json");
  };
  expect_error(put({{"labels", {{"rack", "r7"}}}}, "alicetok"), 403, "permission_denied");
  expect_error(put({{"labels", {{"rack", "r7"}}}}, ""), 401, "unauthenticated");
  expect_error(put({{"labels", {{"rack", "r 7"}}}}, "admintok"), 400, "invalid_argument", "labels.rack");
  expect_error(put({{"labels", {{"-rack", "r7"}}}}, "admintok"), 400, "invalid_argument", "labels");
  expect_error(put({{"labels", "rack=r7"}}, "admintok"), 400, "invalid_argument", "labels");
  expect_error(put({{"label", json::object()}}, "admintok"), 400, "invalid_argument", "label");
  expect_error(put({{"labels", {{"rack", "r7"}}}}, "admintok", "ghost"), 404, "not_found");
  auto ok = put({{"labels", {{"rack", "r7"}, {"fabric", nullptr}, {"zone", "a"}}}}, "admintok");
  ASSERT_EQ(ok->status, 200) << ok->body;
  auto node = Harness::body(h.get("/v1/nodes/n1", "alicetok"));
  EXPECT_EQ(node["labels"], json({{"fabric", "ib"}, {"rack", "r7"}, {"zone", "a"}}));  // fabric: the agent's.
  EXPECT_EQ(node["admin_labels"], json({{"rack", "r7"}, {"zone", "a"}}));
  EXPECT_EQ(node["inventory"]["labels"], json({{"fabric", "ib"}, {"rack", "r1"}}));
  auto list = Harness::body(h.get("/v1/nodes", "alicetok"));
  EXPECT_EQ(list["nodes"][0]["labels"]["rack"], "r7");
  // Submissions naming unknown nodes: 400 naming the entry.
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"exclude", {"n1", "nope"}}}, "alicetok"), 400,
               "invalid_argument", "exclude[1]");
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"node_selector", {{"rack", 7}}}}, "alicetok"), 400,
               "invalid_argument", "node_selector.rack");
}

}  // namespace
}  // namespace tessel::scheduler::testing
