// Projects: the admin API (/v1/projects) and its bad input, the tokens file's
// projects column at submission (403 outside one's projects, 400 for an unknown
// one), quotas and fair share through ClusterState, queue_position and
// estimated_start, and projects and usage across a restart.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using api::JobState;

TokenTable project_tokens() {
  auto t = parse_tokens(
      "admintok admin root\n"
      "alicetok user alice vision,nlp\n"
      "bobtok user bob\n");
  EXPECT_TRUE(t.ok());
  return *t;
}

httplib::Result put(Harness& h, const std::string& path, const json& body, const std::string& token = "") {
  return h.client->Put(path.c_str(), h.auth(token), body.dump(), "application/json");
}
httplib::Result del(Harness& h, const std::string& path, const std::string& token = "") {
  return h.client->Delete(path.c_str(), h.auth(token));
}

TEST(Projects, CreateShowReplaceListAndDelete) {
  Harness h;
  json vision = {{"name", "vision"}, {"shares", 2}, {"quotas", {{"HL-225", {{"guaranteed", 8}, {"max", 16}}}}}};
  auto r = h.post("/v1/projects", vision);
  ASSERT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(Harness::body(r)["quotas"]["HL-225"]["max"], 16);
  EXPECT_EQ(h.post("/v1/projects", vision)->status, 409);
  auto got = Harness::body(h.get("/v1/projects/vision"));
  EXPECT_EQ(got["shares"], 2);
  EXPECT_EQ(got["fair_share"], 1.0);
  // PUT replaces (quotas gone, max null allowed) and creates.
  r = put(h, "/v1/projects/vision", {{"shares", 3}, {"quotas", {{"*", {{"max", nullptr}}}}}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(Harness::body(r)["quotas"]["*"]["max"].is_null());
  ASSERT_EQ(put(h, "/v1/projects/nlp", json::object())->status, 200);
  auto list = Harness::body(h.get("/v1/projects"))["projects"];
  ASSERT_EQ(list.size(), 3u);  // default, nlp, vision.
  EXPECT_EQ(list[0]["name"], "default");
  EXPECT_EQ(list[1]["shares"], 1);
  ASSERT_EQ(del(h, "/v1/projects/nlp")->status, 200);
  EXPECT_EQ(h.get("/v1/projects/nlp")->status, 404);
  EXPECT_EQ(del(h, "/v1/projects/nlp")->status, 404);
  EXPECT_EQ(del(h, "/v1/projects/default")->status, 409);
}

TEST(Projects, BadInputIs400NamingTheFieldAndStoresNothing) {
  Harness h;
  struct Case {
    json body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"name", "v"}, {"shares", 0}}, "shares"},
      {{{"name", "v"}, {"shares", -3}}, "shares"},
      {{{"name", "v"}, {"shares", "2"}}, "shares"},
      {{{"shares", 1}}, "name"},
      {{{"name", "bad name"}}, "name"},
      {{{"name", "v"}, {"quotas", {{"HL-225", {{"guaranteed", 9}, {"max", 8}}}}}}, "quotas.HL-225.guaranteed"},
      {{{"name", "v"}, {"quotas", {{"HL-225", {{"max", -1}}}}}}, "quotas.HL-225.max"},
      {{{"name", "v"}, {"quotas", {{"HL-225", {{"max", 1.5}}}}}}, "quotas.HL-225.max"},
      {{{"name", "v"}, {"quotas", {{"*", {{"guaranteed", -2}}}}}}, "quotas.*.guaranteed"},
      {{{"name", "v"}, {"quotas", {{"*", {{"borrow", 2}}}}}}, "quotas.*.borrow"},
      {{{"name", "v"}, {"quotas", {{"*", 4}}}}, "quotas.*"},
      {{{"name", "v"}, {"quotas", 4}}, "quotas"},
      {{{"name", "v"}, {"colour", "red"}}, "colour"},
  };
  for (const auto& c : cases) {
    auto r = h.post("/v1/projects", c.body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << c.body.dump();
    EXPECT_EQ(Harness::body(r)["error"]["field"], c.field) << c.body.dump() << " -> " << r->body;
    if (c.field == "name") continue;  // PUT takes the name from the URL.
    auto p = put(h, "/v1/projects/v", c.body);
    EXPECT_EQ(p->status, 400) << c.body.dump();
    EXPECT_EQ(Harness::body(p)["error"]["field"], c.field) << c.body.dump() << " -> " << p->body;
  }
  EXPECT_EQ(put(h, "/v1/projects/v", {{"name", "w"}})->status, 400);       // Name differs from the URL.
  EXPECT_EQ(Harness::body(h.get("/v1/projects"))["projects"].size(), 1u);  // Only default.
  EXPECT_EQ(h.get("/v1/projects/v")->status, 404);
}

TEST(Projects, OnlyAdminsWriteThemAndMembersSubmitToThem) {
  Harness h(project_tokens());
  EXPECT_EQ(h.post("/v1/projects", {{"name", "vision"}}, "alicetok")->status, 403);
  ASSERT_EQ(h.post("/v1/projects", {{"name", "vision"}}, "admintok")->status, 201);
  ASSERT_EQ(h.post("/v1/projects", {{"name", "nlp"}}, "admintok")->status, 201);
  EXPECT_EQ(h.get("/v1/projects", "bobtok")->status, 200);
  json spec = {{"command", {"x"}}, {"devices", 1}};
  // alice's default is her first project; she may pick another of hers.
  EXPECT_EQ(h.submit(spec, "alicetok")["spec"]["project"], "vision");
  spec["project"] = "nlp";
  EXPECT_EQ(h.submit(spec, "alicetok")["spec"]["project"], "nlp");
  spec["project"] = "default";
  EXPECT_EQ(h.post("/v1/jobs", spec, "alicetok")->status, 403);
  // bob has no projects column: he belongs to default only.
  EXPECT_EQ(h.submit(spec, "bobtok")["spec"]["project"], "default");
  spec["project"] = "vision";
  EXPECT_EQ(h.post("/v1/jobs", spec, "bobtok")->status, 403);
  spec["project"] = "nowhere";
  auto r = h.post("/v1/jobs", spec, "alicetok");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "project");
  spec["project"] = "no way";
  EXPECT_EQ(Harness::body(h.post("/v1/jobs", spec, "alicetok"))["error"]["field"], "project");
  // Admins may submit anywhere; a project with jobs not ended cannot be deleted.
  spec["project"] = "vision";
  EXPECT_EQ(h.submit(spec, "admintok")["spec"]["project"], "vision");
  EXPECT_EQ(del(h, "/v1/projects/vision", "admintok")->status, 409);
  EXPECT_EQ(Harness::body(h.get("/v1/jobs", "admintok"))["jobs"].size(), 4u);  // Refused ones stored nothing.
}

TEST(Projects, AgentsDoNotSeeTheProjectFields) {
  Harness h;
  h.register_node("n1");
  json spec = {{"command", {"x"}}, {"devices", 1}, {"preemptible", true}};
  const std::string id = h.submit(spec)["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  EXPECT_EQ(Harness::body(h.get("/v1/jobs/" + id))["spec"]["project"], "default");
  const json d = h.desired("n1", 0, 0);
  ASSERT_EQ(d["assignments"].size(), 1u) << d.dump();
  EXPECT_FALSE(d["assignments"][0]["spec"].contains("project")) << d.dump();
  EXPECT_FALSE(d["assignments"][0]["spec"].contains("preemptible")) << d.dump();
}

TEST(Tokens, AFourthColumnListsProjectsFirstIsDefault) {
  auto t = parse_tokens("a user alice vision,nlp\nb user bob\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->by_token["a"].projects, (std::vector<std::string>{"vision", "nlp"}));
  EXPECT_TRUE(t->by_token["b"].projects.empty());
  for (const char* bad : {"a user x vision,,nlp\n", "a user x vision,vision\n", "a user x ,\n", "a user x p q\n"}) {
    auto e = parse_tokens(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_EQ(e.error().message.rfind("line 1:", 0), 0u) << e.error().message;
    }
  }
}

struct Cluster : StateHarness {
  using StateHarness::StateHarness;

  void add_project(const json& body) {
    auto p = api::parse_project(body);
    ASSERT_TRUE(p) << body.dump();
    ASSERT_TRUE(state->put_project(*p).ok());
  }
};

json cards(int devices, const std::string& project = "") {
  json j = {{"command", {"x"}}, {"devices", devices}, {"time_limit_s", 3600}};
  if (!project.empty()) j["project"] = project;
  return j;
}

TEST(ProjectQuotas, AJobPastItsProjectsMaxStaysPendingWithTheReason) {
  Cluster c;
  c.add_node("n1");
  c.add_node("n2");
  c.add_project({{"name", "vision"}, {"quotas", {{"HL-225", {{"max", 8}}}}}});
  const std::string a = c.submit(cards(4, "vision")), b = c.submit(cards(4, "vision"));
  const std::string d = c.submit(cards(2, "vision")), other = c.submit(cards(4));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
  EXPECT_EQ(c.job(b).state, JobState::assigned);
  EXPECT_EQ(c.job(d).state, JobState::pending);
  EXPECT_EQ(c.job(d).reason, "project vision at its max of 8 HL-225 cards");
  EXPECT_EQ(c.job(other).state, JobState::assigned);
  // Once a ends, d fits within the max again.
  ASSERT_TRUE(c.report(a, std::nullopt).ok());
  ASSERT_TRUE(c.report(a, 0).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(d).state, JobState::assigned);
}

TEST(ProjectQuotas, APendingJobShowsItsQueuePositionAndTheReservedOneItsStart) {
  Cluster c;
  c.add_node("n1");
  const std::string running = c.submit(cards(8));
  c.state->schedule_pass();
  ASSERT_EQ(c.job(running).state, JobState::assigned);
  ASSERT_TRUE(c.report(running, std::nullopt).ok());
  const std::string first = c.submit(cards(8)), second = c.submit(cards(4));
  json urgent = cards(2);
  urgent["priority"] = 10;
  const std::string third = c.submit(urgent);
  // The node was full after the last pass and only submissions followed, so a pass
  // within the second would be skipped: a node change counts as new capacity.
  c.add_node("n1");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(third).queue_position, 1);
  EXPECT_EQ(c.job(first).queue_position, 2);
  EXPECT_EQ(c.job(second).queue_position, 3);
  EXPECT_EQ(c.job(running).queue_position, 0);
  // third holds the reservation: it starts when `running` reaches its time limit.
  const int64_t started = c.job(running).started_at_ms;
  ASSERT_TRUE(c.job(third).estimated_start_ms.has_value());
  EXPECT_EQ(*c.job(third).estimated_start_ms, started + 3600 * 1000);
  EXPECT_FALSE(c.job(second).estimated_start_ms.has_value());
  const json shown = api::to_json(c.job(third));
  EXPECT_EQ(shown["queue_position"], 1);
  EXPECT_EQ(shown["estimated_start"], api::format_rfc3339(started + 3600 * 1000));
  auto listed = c.state->list_jobs(JobFilter{});
  ASSERT_FALSE(listed.jobs.empty());
  EXPECT_EQ(listed.jobs.front().queue_position, 1);  // Newest first: third.
}

TEST(ProjectFairShare, AtEqualPriorityTheProjectThatUsedLessGoesFirst) {
  Cluster c;
  c.add_node("n1");
  c.add_project({{"name", "heavy"}});
  c.add_project({{"name", "light"}});
  const std::string h1 = c.submit(cards(8, "heavy"));
  c.state->schedule_pass();
  ASSERT_TRUE(c.report(h1, std::nullopt).ok());
  c.clock.advance_ms(3600 * 1000);
  ASSERT_TRUE(c.report(h1, 0).ok());
  // heavy submits first, but used the node for an hour.
  const std::string h2 = c.submit(cards(8, "heavy"));
  const std::string l1 = c.submit(cards(8, "light"));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(l1).state, JobState::assigned);
  EXPECT_EQ(c.job(h2).state, JobState::pending);
  auto usage = c.state->project_usage();
  EXPECT_NEAR(usage["heavy"].usage, 8 * 3600, 8 * 3600 * 0.01);  // A week's half-life: barely decayed.
  EXPECT_LT(usage["heavy"].fair_share, usage["light"].fair_share);
}

TEST(ProjectFairShare, ProjectsAndUsageSurviveARestart) {
  testkit::TempDir dir("tessel-projects");
  const std::string db = dir.str("s.db");
  std::string h2, l1;
  {
    Cluster c(db);
    c.add_node("n1");
    c.add_project({{"name", "heavy"}, {"shares", 2}});
    c.add_project({{"name", "light"}});
    const std::string h1 = c.submit(cards(8, "heavy"));
    c.state->schedule_pass();
    ASSERT_TRUE(c.report(h1, std::nullopt).ok());
    c.clock.advance_ms(2 * 3600 * 1000);
    ASSERT_TRUE(c.report(h1, 0).ok());
  }
  Cluster c(db);
  auto heavy = c.state->project("heavy");
  ASSERT_TRUE(heavy.ok());
  EXPECT_EQ(heavy->shares, 2);
  auto usage = c.state->project_usage();
  EXPECT_GT(usage["heavy"].usage, 8 * 3600);
  c.add_node("n1");
  h2 = c.submit(cards(8, "heavy"));
  l1 = c.submit(cards(8, "light"));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(l1).state, JobState::assigned);
  EXPECT_EQ(c.job(h2).state, JobState::pending);
}

}  // namespace
}  // namespace tessel::scheduler::testing
