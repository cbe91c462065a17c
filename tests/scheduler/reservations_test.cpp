// Reservations in the scheduler (issue 32, part 4), on the state harness's fake clock:
// creation's checks naming the field, durability across a restart, the pass keeping
// other jobs off reserved nodes (time limits that reach into the window wait), jobs of
// a reservation only in its window on its nodes, maintenance, members only; and the
// REST routes' roles, errors and views.
#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kHour = 3'600'000;

api::Reservation parsed(const json& body, int64_t now) {
  auto r = api::parse_reservation_request(body, now);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : api::Reservation{};
}

// {"name": name, "nodes": nodes, window from now + start_h to now + end_h hours, extra}.
json window(const std::string& name, const std::vector<std::string>& nodes, int64_t now, int start_h, int end_h,
            const json& extra = json::object()) {
  json j = {{"name", name},
            {"nodes", nodes},
            {"start", api::format_rfc3339(now + start_h * kHour)},
            {"end", api::format_rfc3339(now + end_h * kHour)}};
  j.update(extra);
  return j;
}

std::string error_field_of(const Result<api::Reservation>& r) { return r.ok() ? "<made>" : r.error().field; }

TEST(Reservations, CreationChecksNameTheFieldAndSurviveARestart) {
  const testkit::TempDir dir("tessel-resv");
  const std::string db = dir.str("s.db");
  {
    StateHarness h(db);
    h.add_node("n1");
    h.add_node("n2");
    const int64_t now = h.clock.now_ms();
    EXPECT_EQ(error_field_of(h.state->create_reservation(parsed(window("a", {"n1", "n9"}, now, 1, 2), now), "root")),
              "nodes[1]");
    auto made =
        h.state->create_reservation(parsed(window("a", {"n1"}, now, 1, 3, {{"users", {"alice"}}}), now), "root");
    ASSERT_TRUE(made.ok()) << made.error().message;
    EXPECT_EQ(made->created_by, "root");
    // n1 again, overlapping: refused naming nodes; after a's end it is fine.
    EXPECT_EQ(error_field_of(h.state->create_reservation(parsed(window("b", {"n1"}, now, 2, 4), now), "root")),
              "nodes");
    EXPECT_TRUE(h.state->create_reservation(parsed(window("b", {"n1"}, now, 3, 4), now), "root").ok());
    EXPECT_EQ(h.state->create_reservation(parsed(window("a", {"n2"}, now, 5, 6), now), "root").error().code,
              ErrorCode::conflict);
    // count: picks nodes free in the window; more than there are is refused naming count.
    auto counted = h.state->create_reservation(
        parsed({{"name", "c"}, {"count", 1}, {"end", "2027-01-15T10:00:00Z"}}, now), "root");
    ASSERT_TRUE(counted.ok()) << counted.error().message;
    EXPECT_EQ(counted->nodes, std::vector<std::string>{"n2"});  // n1 is a's from 09:00.
    EXPECT_EQ(error_field_of(h.state->create_reservation(
                  parsed({{"name", "d"}, {"count", 3}, {"end", "2027-01-15T10:00:00Z"}}, now), "root")),
              "count");
    EXPECT_EQ(
        error_field_of(h.state->create_reservation(
            parsed({{"name", "e"}, {"count", 1}, {"node_selector", {{"rack", "r9"}}}, {"end", 1'800'100'000}}, now),
            "root")),
        "count");
    // A failed write stores nothing.
    h.store->fail_writes = true;
    EXPECT_FALSE(h.state->create_reservation(parsed(window("f", {"n2"}, now, 10, 11), now), "root").ok());
    h.store->fail_writes = false;
    EXPECT_FALSE(h.state->reservation("f").ok());
    ASSERT_TRUE(h.state->delete_reservation("b").ok());
    EXPECT_EQ(h.state->delete_reservation("b").error().code, ErrorCode::not_found);
  }
  StateHarness again(db);
  auto all = again.state->reservations();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[0].users, std::vector<std::string>{"alice"});
  EXPECT_EQ(all[1].name, "c");
  // And placement knows them again: n1's view lists a.
  auto n1 = again.state->node("n1");
  ASSERT_TRUE(n1.ok());
  ASSERT_EQ(n1->reservations.size(), 1u);
  EXPECT_EQ(n1->reservations[0].name, "a");
}

TEST(Reservations, PassKeepsOtherJobsOffAndRunsMembersInTheWindow) {
  StateHarness h;
  h.add_node("n1");
  const int64_t now = h.clock.now_ms();
  ASSERT_TRUE(
      h.state->create_reservation(parsed(window("demo", {"n1"}, now, 1, 3, {{"users", {"alice"}}}), now), "root").ok());
  // Before the window: a job whose time limit reaches into it waits; one without a
  // time limit too; a member waits for the window.
  const std::string long_job = h.submit({{"command", {"x"}}, {"devices", 8}, {"time_limit_s", 7200}}, "bob");
  const std::string no_limit = h.submit({{"command", {"x"}}, {"devices", 8}}, "bob");
  const std::string member = h.submit({{"command", {"x"}}, {"devices", 4}, {"reservation", "demo"}}, "alice");
  h.state->schedule_pass();
  EXPECT_EQ(h.job(long_job).state, api::JobState::pending);
  EXPECT_EQ(h.job(long_job).reason, "node n1 is reserved for demo from 2027-01-15T09:00:00.000Z");
  EXPECT_EQ(h.job(no_limit).reason,
            "node n1 is reserved for demo from 2027-01-15T09:00:00.000Z (the job has no time limit)");
  EXPECT_EQ(h.job(member).reason, "waiting for reservation demo to start at 2027-01-15T09:00:00.000Z");
  // A short job fits before the window: it runs.
  const std::string short_job = h.submit({{"command", {"x"}}, {"devices", 2}, {"time_limit_s", 1800}}, "bob");
  h.state->schedule_pass();
  EXPECT_EQ(h.job(short_job).state, api::JobState::assigned);
  // In the window: the member runs; the others still wait, naming the window's end.
  h.clock.advance_ms(kHour);
  h.state->schedule_pass();
  EXPECT_EQ(h.job(member).state, api::JobState::assigned);
  ASSERT_EQ(h.job(member).allocations.size(), 1u);
  EXPECT_EQ(h.job(member).allocations[0].node, "n1");
  const std::string small = h.submit({{"command", {"x"}}, {"devices", 1}, {"time_limit_s", 60}}, "bob");
  h.state->schedule_pass();
  EXPECT_EQ(h.job(small).reason, "node n1 is reserved for demo until 2027-01-15T11:00:00.000Z");
  // After it: n1 is everyone's again; the long job waits for cards, not the window.
  h.clock.advance_ms(2 * kHour);
  h.state->schedule_pass();
  EXPECT_EQ(h.job(long_job).reason.find("demo"), std::string::npos) << h.job(long_job).reason;
}

TEST(Reservations, MaintenanceAndMembersOnly) {
  StateHarness h;
  h.add_node("n1");
  h.add_node("n2");
  const int64_t now = h.clock.now_ms();
  ASSERT_TRUE(
      h.state->create_reservation(parsed(window("fix", {"n1"}, now, 0, 2, {{"maintenance", true}}), now), "root").ok());
  ASSERT_TRUE(
      h.state->create_reservation(parsed(window("team", {"n2"}, now, 0, 2, {{"projects", {"default"}}}), now), "root")
          .ok());
  api::JobSpec spec = *api::parse_job_spec({{"command", {"x"}}, {"reservation", "fix"}});
  spec.project = "default";
  EXPECT_EQ(h.state->check_reservation_use(spec, "alice", false).error().code, ErrorCode::permission_denied);
  spec.constraints.reservation = "team";
  EXPECT_TRUE(h.state->check_reservation_use(spec, "alice", false).ok());
  spec.project = "other";
  EXPECT_EQ(h.state->check_reservation_use(spec, "alice", false).error().field, "reservation");
  EXPECT_TRUE(h.state->check_reservation_use(spec, "root", true).ok());  // Admins may.
  spec.constraints.reservation = "nope";
  EXPECT_EQ(h.state->check_reservation_use(spec, "root", true).error().code, ErrorCode::invalid_argument);
  // No job of anyone's runs on n1 in maintenance; n2 takes only team's.
  const std::string plain = h.submit({{"command", {"x"}}, {"devices", 1}, {"time_limit_s", 60}});
  const std::string team = h.submit({{"command", {"x"}}, {"devices", 1}, {"reservation", "team"}});
  h.state->schedule_pass();
  EXPECT_EQ(h.job(plain).state, api::JobState::pending);
  EXPECT_EQ(h.job(team).state, api::JobState::assigned);
  EXPECT_EQ(h.job(team).allocations[0].node, "n2");
  // Deleting the maintenance reservation frees n1 at the next pass.
  ASSERT_TRUE(h.state->delete_reservation("fix").ok());
  h.state->schedule_pass();
  EXPECT_EQ(h.job(plain).state, api::JobState::assigned);
  EXPECT_EQ(h.job(plain).allocations[0].node, "n1");
}

TokenTable tokens() { return tokens_from("admintok admin root\nalicetok user alice\nagenttok agent n1\n"); }

void expect_error(const httplib::Result& r, int status, const std::string& code, const std::string& field = "") {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  auto j = Harness::body(r);
  EXPECT_EQ(j["error"]["code"], code) << r->body;
  if (!field.empty()) EXPECT_EQ(j["error"]["field"], field) << r->body;
}

TEST(ReservationsApi, RolesErrorsAndViews) {
  Harness h(tokens());
  auto reg =
      h.post("/v1/agent/register", {{"node", "n1"}, {"address", "h1"}, {"inventory", gaudi_inventory()}}, "agenttok");
  ASSERT_EQ(reg->status, 200) << reg->body;
  const int64_t now = h.clock.now_ms();
  const json body = window("demo", {"n1"}, now, 1, 2, {{"users", {"alice"}}});
  expect_error(h.post("/v1/reservations", body, "alicetok"), 403, "permission_denied");
  expect_error(h.post("/v1/reservations", body, ""), 401, "unauthenticated");
  expect_error(h.get("/v1/reservations", "alicetok"), 403, "permission_denied");
  expect_error(h.post("/v1/reservations", window("x", {"n7"}, now, 1, 2), "admintok"), 400, "invalid_argument",
               "nodes[0]");
  expect_error(h.post("/v1/reservations", window("x", {"n1"}, now, 2, 1), "admintok"), 400, "invalid_argument", "end");
  auto made = h.post("/v1/reservations", body, "admintok");
  ASSERT_EQ(made->status, 201) << made->body;
  EXPECT_EQ(Harness::body(made)["state"], "pending");
  expect_error(h.post("/v1/reservations", window("y", {"n1"}, now, 0, 3), "admintok"), 400, "invalid_argument",
               "nodes");
  auto list = Harness::body(h.get("/v1/reservations", "admintok"));
  ASSERT_EQ(list["reservations"].size(), 1u);
  EXPECT_EQ(list["reservations"][0]["nodes"], json({"n1"}));
  auto one = Harness::body(h.get("/v1/reservations/demo", "admintok"));
  EXPECT_EQ(one["users"], json({"alice"}));
  expect_error(h.get("/v1/reservations/nope", "admintok"), 404, "not_found");
  auto node = Harness::body(h.get("/v1/nodes/n1", "alicetok"));
  ASSERT_EQ(node["reservations"].size(), 1u);
  EXPECT_EQ(node["reservations"][0]["name"], "demo");
  // Submissions: an unknown reservation is a 400, one of alice's a 201.
  expect_error(h.post("/v1/jobs", {{"command", {"x"}}, {"reservation", "nope"}}, "alicetok"), 400, "invalid_argument",
               "reservation");
  auto sub = h.post("/v1/jobs", {{"command", {"x"}}, {"reservation", "demo"}}, "alicetok");
  EXPECT_EQ(sub->status, 201) << sub->body;
  auto gone = h.client->Delete("/v1/reservations/demo", h.auth("admintok"));
  ASSERT_EQ(gone->status, 200) << gone->body;
  expect_error(h.client->Delete("/v1/reservations/demo", h.auth("admintok")), 404, "not_found");
}

}  // namespace
}  // namespace tessel::scheduler::testing
