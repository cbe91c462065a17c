// A job's state history (GET /v1/jobs/{id}/events): each change of state or
// attempt in order, with time, nodes, attempt and reason; stored with the job, so
// it comes back after a restart.
#include "harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

// "event@attempt[nodes]" for each event, in order.
std::vector<std::string> summary(const json& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    std::string s = e["event"].get<std::string>() + "@" + std::to_string(e["attempt"].get<int>());
    for (const auto& n : e["nodes"]) s += " " + n.get<std::string>();
    out.push_back(s);
  }
  return out;
}

json events_of(httplib::Client& c, const std::string& id) {
  auto r = c.Get(("/v1/jobs/" + id + "/events").c_str());
  EXPECT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body)["events"];
}

TEST(JobEvents, EveryTransitionInOrderAndAfterARestart) {
  const testkit::TempDir dir("tessel-events");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  const ServiceOptions opts = test_service_options();
  std::string id;
  std::vector<std::string> expected = {"submitted@0",   "assigned@0 n1", "running@0 n1",  "requeued@0 n1",
                                       "assigned@1 n1", "running@1 n1",  "succeeded@1 n1"};
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    httplib::Client c("127.0.0.1", svc.port());
    auto post = [&](const std::string& path, const json& body) {
      auto r = c.Post(path.c_str(), body.dump(), "application/json");
      EXPECT_TRUE(r);
      return r ? r->status : 0;
    };
    auto state = [&] { return json::parse(c.Get(("/v1/jobs/" + id).c_str())->body)["state"].get<std::string>(); };
    ASSERT_EQ(post("/v1/agent/register", {{"node", "n1"}, {"address", "h1"}, {"inventory", gaudi_inventory()}}), 200);
    auto r =
        c.Post("/v1/jobs", json{{"command", {"x"}}, {"devices", 1}, {"max_retries", 1}}.dump(), "application/json");
    ASSERT_EQ(r->status, 201);
    id = json::parse(r->body)["id"];
    EXPECT_FALSE(json::parse(r->body).contains("events")) << "the history has its own endpoint";
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::string aid = id + "." + std::to_string(attempt) + ".0";
      ASSERT_TRUE(eventually([&] { return state() == "assigned"; }));
      clock.advance_ms(1000);
      ASSERT_EQ(post("/v1/agent/heartbeat",
                     {{"node", "n1"}, {"inventory", gaudi_inventory()}, {"tasks", {report(aid, "running")}}}),
                200);
      ASSERT_EQ(state(), "running");
      clock.advance_ms(1000);
      ASSERT_EQ(
          post("/v1/agent/heartbeat",
               {{"node", "n1"}, {"inventory", gaudi_inventory()}, {"tasks", {report(aid, "exited", attempt ? 0 : 3)}}}),
          200);
    }
    ASSERT_EQ(state(), "succeeded");
    const json events = events_of(c, id);
    EXPECT_EQ(summary(events), expected);
    // Times never go back; reasons and exit codes where there are some.
    for (size_t i = 1; i < events.size(); ++i)
      EXPECT_LE(events[i - 1]["at"].get<std::string>(), events[i]["at"].get<std::string>());
    EXPECT_EQ(events[3]["state"], "pending");
    EXPECT_EQ(events[3]["reason"], "requeued after attempt 0: rank exited with code 3");
    EXPECT_EQ(events[6]["state"], "succeeded");
    EXPECT_EQ(events[6]["exit_code"], 0);
    EXPECT_FALSE(json::parse(c.Get(("/v1/jobs/" + id).c_str())->body).contains("events"));
    EXPECT_FALSE(json::parse(c.Get("/v1/jobs")->body)["jobs"][0].contains("events"));
  }
  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok());
  Service svc(**store, clock, std::nullopt, opts);
  ASSERT_TRUE(svc.start().ok());
  httplib::Client c("127.0.0.1", svc.port());
  EXPECT_EQ(summary(events_of(c, id)), expected);
  EXPECT_EQ(c.Get("/v1/jobs/j-00000999/events")->status, 404);
}

TEST(JobEvents, CancelledWhilePendingAndAtSubmission) {
  Harness h;
  auto waiting = h.submit({{"command", {"x"}}, {"devices", 8}});  // No node: stays pending.
  const std::string id = waiting["id"];
  ASSERT_EQ(h.post("/v1/jobs/" + id + "/cancel", json::object())->status, 200);
  json events = Harness::body(h.get("/v1/jobs/" + id + "/events"))["events"];
  ASSERT_EQ(summary(events), (std::vector<std::string>{"submitted@0", "cancelled@0"}));
  EXPECT_EQ(events[1]["reason"], "cancelled by anonymous");
  // A dependency that ended badly: cancelled in the same write as its submission.
  auto dependent = h.submit({{"command", {"x"}}, {"after_ok", {id}}});
  events = Harness::body(h.get("/v1/jobs/" + dependent["id"].get<std::string>() + "/events"))["events"];
  ASSERT_EQ(summary(events), (std::vector<std::string>{"submitted@0", "cancelled@0"}));
  EXPECT_FALSE(events[0].contains("reason"));
  EXPECT_EQ(events[1]["reason"], "dependency " + id + " was cancelled");
}

TEST(JobEvents, AWaitingSubmissionKeepsItsReason) {
  Harness h;
  auto first = h.submit({{"command", {"x"}}, {"devices", 8}});
  const std::string first_id = first["id"];
  auto second = h.submit({{"command", {"x"}}, {"after_any", {first_id}}});
  json events = Harness::body(h.get("/v1/jobs/" + second["id"].get<std::string>() + "/events"))["events"];
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "waiting for " + first_id);
}

TEST(JobEvents, ReadableByWhoeverMayReadTheJob) {
  auto tokens = parse_tokens("alice-token user alice\nbob-token user bob\n");
  ASSERT_TRUE(tokens.ok());
  Harness h(*tokens);
  auto job = h.submit({{"command", {"x"}}}, "alice-token");
  const std::string path = "/v1/jobs/" + job["id"].get<std::string>() + "/events";
  EXPECT_EQ(h.get(path)->status, 401);
  EXPECT_EQ(h.get(path, "bob-token")->status, 200);
  EXPECT_EQ(Harness::body(h.get(path, "alice-token"))["events"].size(), 1u);
}

}  // namespace
}  // namespace tessel::scheduler::testing
