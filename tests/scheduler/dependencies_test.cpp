// Job dependencies (after_ok, after_any, after_not_ok) at the ClusterState level: no
// HTTP and no scheduler thread; the test runs each scheduling pass itself, reports
// tasks as an agent would, and the FakeClock stands still. One test goes through
// the REST API (the 400 naming the field, and GET showing the fields).
#include <gtest/gtest.h>

#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using api::JobState;

struct Cluster : StateHarness {
  using StateHarness::StateHarness;

  // Places `id` (with a pass), runs it and ends it with `code`.
  void run_to_end(const std::string& id, int code) {
    state->schedule_pass();
    StateHarness::run_to_end(id, code);
    ASSERT_TRUE(api::is_terminal(job(id).state));
  }
};

json cards(int devices) { return {{"command", {"x"}}, {"devices", devices}}; }
json with(json spec, const char* key, const std::vector<std::string>& ids) {
  spec[key] = ids;
  return spec;
}

TEST(Dependencies, AWaitingJobHasAReasonAndNeitherBlocksNorReservesCards) {
  Cluster c;
  c.add_node("n1");
  const std::string a = c.submit(cards(4));
  c.state->schedule_pass();
  ASSERT_EQ(c.job(a).state, JobState::assigned);
  // b would take the whole node first and hold a reservation that c, without a time
  // limit, could not backfill around; waiting for a, it is not in the queue at all.
  json high = cards(8);
  high["priority"] = 100;
  const std::string b = c.submit(with(high, "after_ok", {a}));
  const std::string other = c.submit(cards(4));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason, "waiting for " + a);
  EXPECT_EQ(c.job(other).state, JobState::assigned);
}

TEST(Dependencies, StartsOnceEveryDependencySucceededAndNamesTheFirstUnmet) {
  Cluster c;
  c.add_node("n1");
  const std::string a1 = c.submit(cards(4)), a2 = c.submit(cards(4));
  const std::string b = c.submit(with(cards(8), "after_ok", {a1, a2}));
  EXPECT_EQ(c.job(b).reason, "waiting for " + a1);
  c.run_to_end(a1, 0);
  EXPECT_EQ(c.job(b).reason, "waiting for " + a2);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::pending);
  c.run_to_end(a2, 0);
  // Released by the report that ended a2, before any pass.
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason, "");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::assigned);
}

TEST(Dependencies, AFailureCancelsTheChainInTheSameChangeAndReleasesTheOthers) {
  Cluster c;
  c.add_node("n1");
  const std::string a = c.submit(cards(8));
  const std::string b = c.submit(with(cards(1), "after_ok", {a}));
  const std::string b2 = c.submit(with(cards(1), "after_ok", {b}));
  const std::string b3 = c.submit(with(cards(1), "after_not_ok", {b2}));  // Met by the cascade.
  const std::string d = c.submit(with(cards(1), "after_not_ok", {a}));
  const std::string e = c.submit(with(cards(1), "after_any", {a}));
  c.state->schedule_pass();
  ASSERT_EQ(c.job(a).state, JobState::assigned);
  ASSERT_TRUE(c.report(a, std::nullopt).ok());

  // A failed write changes nothing: the dependents still wait.
  c.store->fail_writes = true;
  EXPECT_FALSE(c.report(a, 3).ok());
  EXPECT_EQ(c.job(a).state, JobState::running);
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(d).reason, "waiting for " + a);
  c.store->fail_writes = false;

  ASSERT_TRUE(c.report(a, 3).ok());
  EXPECT_EQ(c.job(a).state, JobState::failed);
  EXPECT_EQ(c.job(b).state, JobState::cancelled);
  EXPECT_EQ(c.job(b).reason, "dependency " + a + " failed");
  EXPECT_EQ(c.job(b).finished_at_ms, c.clock.now_ms());
  EXPECT_EQ(c.job(b2).state, JobState::cancelled);
  EXPECT_EQ(c.job(b2).reason, "dependency " + b + " was cancelled");
  for (const auto& id : {b3, d, e}) {
    EXPECT_EQ(c.job(id).state, JobState::pending) << id;
    EXPECT_EQ(c.job(id).reason, "") << id;
  }
  c.state->schedule_pass();
  for (const auto& id : {b3, d, e}) EXPECT_EQ(c.job(id).state, JobState::assigned) << id;
  // All of it was one write: the store holds the same.
  auto snap = c.store->load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->jobs.at(1).state, JobState::cancelled);  // b
  EXPECT_EQ(snap->jobs.at(2).state, JobState::cancelled);  // b2
}

TEST(Dependencies, AfterNotOkIsCancelledWhenTheJobSucceedsAfterAnyIsNot) {
  Cluster c;
  c.add_node("n1");
  const std::string a = c.submit(cards(8));
  const std::string d = c.submit(with(cards(1), "after_not_ok", {a}));
  const std::string e = c.submit(with(cards(1), "after_any", {a}));
  c.run_to_end(a, 0);
  EXPECT_EQ(c.job(d).state, JobState::cancelled);
  EXPECT_EQ(c.job(d).reason, "dependency " + a + " succeeded");
  EXPECT_EQ(c.job(e).state, JobState::pending);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(e).state, JobState::assigned);
}

TEST(Dependencies, CancellingAPendingDependencyCancelsItsAfterOkDependents) {
  Cluster c;  // No nodes: nothing is ever placed.
  const std::string a = c.submit(cards(8));
  const std::string b = c.submit(with(cards(8), "after_ok", {a}));
  const std::string e = c.submit(with(cards(8), "after_any", {a}));
  const std::string w = c.submit(with(cards(8), "after_ok", {e}));
  const Principal alice{"alice", Role::user, "", {}};
  ASSERT_TRUE(c.state->cancel(w, alice).ok());  // A waiting job itself.
  EXPECT_EQ(c.job(w).reason, "cancelled by alice");
  ASSERT_TRUE(c.state->cancel(a, alice).ok());
  EXPECT_EQ(c.job(b).state, JobState::cancelled);
  EXPECT_EQ(c.job(b).reason, "dependency " + a + " was cancelled");
  EXPECT_EQ(c.job(e).state, JobState::pending);
  EXPECT_EQ(c.job(e).reason, "");
}

TEST(Dependencies, AJobThatAlreadyEndedCountsAtSubmission) {
  Cluster c;
  c.add_node("n1");
  const std::string a = c.submit(cards(8));
  c.run_to_end(a, 0);
  const std::string b = c.submit(with(cards(8), "after_ok", {a}));
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason, "");
  auto d = c.try_submit(with(cards(1), "after_not_ok", {a}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->state, JobState::cancelled);
  EXPECT_EQ(d->reason, "dependency " + a + " succeeded");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::assigned);
}

TEST(Dependencies, UnknownJobsAndItselfAreRefusedNamingTheFieldAndNothingIsStored) {
  Cluster c;
  const std::string a = c.submit(cards(0));  // j-00000001
  ASSERT_EQ(a, "j-00000001");
  struct Case {
    const char* field;
    std::string id;
    std::string message;
  };
  for (const auto& bad : {Case{"after_ok", "j-00000099", "after_ok: unknown job j-00000099"},
                          Case{"after_any", "j-00000002", "after_any: a job cannot depend on itself"},
                          Case{"after_not_ok", "j-00000002", "after_not_ok: a job cannot depend on itself"}}) {
    auto r = c.try_submit(with(cards(0), bad.field, {a, bad.id}));
    ASSERT_FALSE(r.ok()) << bad.field;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(r.error().field, bad.field);
    EXPECT_EQ(r.error().message, bad.message);
  }
  EXPECT_EQ(c.store->load()->jobs.size(), 1u);
  EXPECT_EQ(c.submit(with(cards(0), "after_ok", {a})), "j-00000002");  // No id was used up.
}

TEST(Dependencies, SurviveARestartAndAreEvaluatedAfterLoad) {
  const testkit::TempDir dir("tessel-deps");
  const std::string db = dir.str("s.db");
  std::string a, b, doomed;
  {
    Cluster c(db);
    c.add_node("n1");
    a = c.submit(cards(8));
    c.state->schedule_pass();
    ASSERT_TRUE(c.report(a, std::nullopt).ok());
    b = c.submit(with(cards(8), "after_ok", {a}));
    doomed = c.submit(with(cards(1), "after_not_ok", {a}));
  }
  Cluster c(db);
  EXPECT_EQ(c.job(a).state, JobState::running);
  EXPECT_EQ(c.job(b).spec.after_ok, std::vector<std::string>{a});
  EXPECT_EQ(c.job(b).reason, "waiting for " + a);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::pending);
  ASSERT_TRUE(c.report(a, 0).ok());
  EXPECT_EQ(c.job(doomed).state, JobState::cancelled);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::assigned);
}

// Over HTTP: the 400 envelope names the field; GET shows the dependencies and the reason.
TEST(Dependencies, RestApiNamesTheFieldAndShowsTheDependencies) {
  Harness h;
  const std::string a = h.submit(cards(8))["id"];
  auto r = h.post("/v1/jobs", with(cards(8), "after_any", {"j-00000077"}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "after_any");
  r = h.post("/v1/jobs", with(cards(8), "after_not_ok", {"j-7"}));
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "after_not_ok");
  const std::string b = h.submit(with(cards(8), "after_ok", {a}))["id"];
  auto got = Harness::body(h.get("/v1/jobs/" + b));
  EXPECT_EQ(got["spec"]["after_ok"], json::array({a}));
  EXPECT_FALSE(got["spec"].contains("after_any"));
  EXPECT_EQ(got["state"], "pending");
  EXPECT_EQ(got["reason"], "waiting for " + a);
}

}  // namespace
}  // namespace tessel::scheduler::testing
