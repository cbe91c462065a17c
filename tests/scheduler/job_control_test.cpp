// Job control (issue 31) through ClusterState on a FakeClock and through the REST
// API: hold and release (pending jobs and arrays, out of every pass while held, the
// hold stored and restored), the events naming who, and who may do what.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using api::JobState;

const Principal kAlice{"alice", Role::user, "", {}};
const Principal kBob{"bob", Role::user, "", {}};
const Principal kRoot{"root", Role::admin, "", {}};

json eight_cards() { return {{"command", {"x"}}, {"devices", 8}}; }

struct Control : StateHarness {
  using StateHarness::StateHarness;
  // Fills n1 with a running job; returns its id.
  std::string busy() {
    add_node("n1");
    const std::string id = submit(eight_cards());
    state->schedule_pass();
    EXPECT_EQ(job(id).state, JobState::assigned);
    EXPECT_TRUE(report(id, std::nullopt).ok());
    return id;
  }
  const api::JobEvent& last_event(const std::string& id) {
    last_ = job(id).events;
    return last_.back();
  }
  std::vector<api::JobEvent> last_;
};

TEST(JobControl, AHeldJobIsPassedOverUntilReleased) {
  Control c;
  const std::string running = c.busy();
  const std::string first = c.submit(eight_cards());
  auto held = c.state->hold(first, kAlice);
  ASSERT_TRUE(held.ok()) << held.error().message;
  EXPECT_EQ(held->state, JobState::pending);
  EXPECT_EQ(held->held_by, "alice");
  EXPECT_EQ(held->reason, "held by alice");
  EXPECT_EQ(c.last_event(first).event, "held");
  EXPECT_EQ(c.last_event(first).by, "alice");
  // Holding again changes nothing.
  ASSERT_TRUE(c.state->hold(first, kAlice).ok());
  EXPECT_EQ(c.job(first).events.size(), 2u);

  const std::string second = c.submit(eight_cards());
  ASSERT_TRUE(c.report(running, 0).ok());
  c.state->schedule_pass();
  // The held job, first in the queue, was passed over: the later one took the cards.
  EXPECT_EQ(c.job(first).state, JobState::pending);
  EXPECT_EQ(c.job(first).reason, "held by alice");
  EXPECT_EQ(c.job(second).state, JobState::assigned);

  auto released = c.state->release(first, kAlice);
  ASSERT_TRUE(released.ok()) << released.error().message;
  EXPECT_TRUE(released->held_by.empty());
  EXPECT_EQ(c.last_event(first).event, "released");
  EXPECT_EQ(c.last_event(first).by, "alice");
  c.run_to_end(second, 0);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(first).state, JobState::assigned);
}

TEST(JobControl, WrongStatesAreConflictsAndOthersJobsForbidden) {
  Control c;
  const std::string running = c.busy();
  auto r = c.state->hold(running, kAlice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_NE(r.error().message.find("only a pending job can be held"), std::string::npos) << r.error().message;
  const std::string pending = c.submit(eight_cards());
  r = c.state->release(pending, kAlice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_EQ(r.error().message, "job " + pending + " is not held");
  EXPECT_EQ(c.state->hold(pending, kBob).error().code, ErrorCode::permission_denied);
  EXPECT_EQ(c.state->hold("j-00000099", kAlice).error().code, ErrorCode::not_found);
  // An admin's hold is the admin's to release, not the owner's.
  ASSERT_TRUE(c.state->hold(pending, kRoot).ok());
  EXPECT_EQ(c.job(pending).reason, "held by root");
  EXPECT_EQ(c.state->release(pending, kAlice).error().code, ErrorCode::permission_denied);
  ASSERT_TRUE(c.state->release(pending, kRoot).ok());
  // A cancelled job is no longer held, and cannot be.
  ASSERT_TRUE(c.state->hold(pending, kAlice).ok());
  ASSERT_TRUE(c.state->cancel(pending, kAlice).ok());
  EXPECT_TRUE(c.job(pending).held_by.empty());
  EXPECT_EQ(c.state->hold(pending, kAlice).error().code, ErrorCode::conflict);
}

TEST(JobControl, AHoldSurvivesARestart) {
  const testkit::TempDir dir("tessel-hold");
  const std::string db = dir.str("s.db");
  std::string id;
  {
    Control c(db);
    c.add_node("n1");
    id = c.submit(eight_cards());
    ASSERT_TRUE(c.state->hold(id, kAlice).ok());
  }
  Control c(db);
  EXPECT_EQ(c.job(id).held_by, "alice");
  EXPECT_EQ(c.job(id).reason, "held by alice");
  c.state->schedule_pass();  // Free cards, and still it waits.
  EXPECT_EQ(c.job(id).state, JobState::pending);
  ASSERT_TRUE(c.state->release(id, kAlice).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(id).state, JobState::assigned);
}

TEST(JobControl, AnArrayHoldsAndReleasesItsPendingElements) {
  Control c;
  c.add_node("n1");
  const std::string parent = c.submit({{"command", {"x"}}, {"devices", 8}, {"array", {{"count", 3}}}});
  c.state->schedule_pass();
  ASSERT_EQ(c.job(parent + "_0").state, JobState::assigned);
  ASSERT_TRUE(c.state->hold(parent, kAlice).ok());
  EXPECT_TRUE(c.job(parent + "_0").held_by.empty());  // Not pending: left alone.
  EXPECT_EQ(c.job(parent + "_1").held_by, "alice");
  EXPECT_EQ(c.job(parent + "_2").held_by, "alice");
  c.run_to_end(parent + "_0", 0);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(parent + "_1").state, JobState::pending);
  ASSERT_TRUE(c.state->release(parent, kAlice).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(parent + "_1").state, JobState::assigned);
  EXPECT_TRUE(c.job(parent + "_2").held_by.empty());
}

TEST(JobControl, AReleasedJobWhoseDependencyFailedIsCancelled) {
  Control c;
  c.add_node("n1");
  const std::string dep = c.submit(eight_cards());
  const std::string after = c.submit({{"command", {"x"}}, {"devices", 8}, {"after_ok", {dep}}});
  ASSERT_TRUE(c.state->hold(after, kAlice).ok());
  c.state->schedule_pass();
  c.run_to_end(dep, 1);
  EXPECT_EQ(c.job(after).state, JobState::pending);  // Held: its dependencies wait too.
  auto r = c.state->release(after, kAlice);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, JobState::cancelled);
  EXPECT_EQ(r->reason, "dependency " + dep + " failed");
}

TEST(JobControlApi, HoldAndReleaseOverHttp) {
  Harness h(tokens_from("admintok admin root\nalicetok user alice\nbobtok user bob\n"));
  const std::string id = h.submit({{"command", {"x"}}}, "alicetok")["id"];
  auto expect = [&](const httplib::Result& r, int status) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
  };
  expect(h.post("/v1/jobs/" + id + "/hold", json::object()), 401);
  expect(h.post("/v1/jobs/" + id + "/hold", json::object(), "bobtok"), 403);
  expect(h.post("/v1/jobs/j-00000099/hold", json::object(), "alicetok"), 404);
  expect(h.post("/v1/jobs/" + id + "/release", json::object(), "alicetok"), 409);
  auto held = h.post("/v1/jobs/" + id + "/hold", json::object(), "alicetok");
  expect(held, 200);
  EXPECT_EQ(Harness::body(held)["held_by"], "alice");
  EXPECT_EQ(Harness::body(held)["reason"], "held by alice");
  auto events = Harness::body(h.get("/v1/jobs/" + id + "/events", "bobtok"))["events"];
  EXPECT_EQ(events.back()["event"], "held");
  EXPECT_EQ(events.back()["by"], "alice");
  expect(h.post("/v1/jobs/" + id + "/release", json::object(), "bobtok"), 403);
  auto released = h.post("/v1/jobs/" + id + "/release", json::object(), "admintok");
  expect(released, 200);
  EXPECT_FALSE(Harness::body(released).contains("held_by"));
  events = Harness::body(h.get("/v1/jobs/" + id + "/events", "alicetok"))["events"];
  EXPECT_EQ(events.back()["event"], "released");
  EXPECT_EQ(events.back()["by"], "root");
}

}  // namespace
}  // namespace tessel::scheduler::testing
