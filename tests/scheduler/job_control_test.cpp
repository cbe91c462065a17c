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

TEST(JobControl, ASignalReachesTheAssignmentsOfARunningJob) {
  Control c;
  c.add_node("n1");
  const std::string id = c.submit(eight_cards());
  EXPECT_EQ(c.state->signal(id, "USR1", kAlice).error().code, ErrorCode::conflict);  // Pending.
  c.state->schedule_pass();
  auto r = c.state->signal(id, "USR1", kAlice);
  ASSERT_FALSE(r.ok());  // Assigned, its ranks not all running yet.
  EXPECT_EQ(r.error().message, "job " + id + " is assigned: only a running job can be signalled");
  ASSERT_TRUE(c.report(id, std::nullopt).ok());
  EXPECT_EQ(c.state->signal(id, "USR1", kBob).error().code, ErrorCode::permission_denied);
  ASSERT_TRUE(c.state->signal(id, "USR1", kAlice).ok());
  ASSERT_TRUE(c.state->signal(id, "TERM", kRoot).ok());
  std::vector<api::Assignment> desired;
  ASSERT_TRUE(
      c.state->watch_desired("n1", -1, [&](const Result<api::DesiredState>& d) { desired = d->assignments; }).ok());
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].signals, (std::vector<api::JobSignal>{{1, "USR1"}, {2, "TERM"}}));
  EXPECT_EQ(c.last_event(id).event, "signalled");
  EXPECT_EQ(c.last_event(id).by, "root");
  EXPECT_EQ(c.last_event(id).reason, "SIGTERM to every rank");
  EXPECT_EQ(c.last_event(id).nodes, std::vector<std::string>{"n1"});
  // Only the latest are kept, their ids still rising.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.state->signal(id, "HUP", kAlice).ok());
  EXPECT_EQ(c.job(id).signals.size(), api::kMaxJobSignals);
  EXPECT_EQ(c.job(id).signals.back().id, 22);
}

api::JobUpdate priority(int p) {
  api::JobUpdate u;
  u.priority = p;
  return u;
}
api::JobUpdate time_limit(int64_t s) {
  api::JobUpdate u;
  u.time_limit_s = s;
  return u;
}

TEST(JobControl, AnUpdateMovesAJobUpTheQueueAndOnlyAdminsRaise) {
  Control c;
  const std::string running = c.busy();
  const std::string first = c.submit({{"command", {"x"}}, {"devices", 8}, {"time_limit_s", 3600}});
  const std::string second = c.submit(eight_cards());
  EXPECT_EQ(c.state->update(second, priority(10), kAlice).error().code, ErrorCode::permission_denied);
  EXPECT_EQ(c.state->update(first, time_limit(7200), kAlice).error().code, ErrorCode::permission_denied);
  EXPECT_EQ(c.state->update(running, priority(-1), kAlice).error().code, ErrorCode::conflict);
  EXPECT_EQ(c.state->update(first, priority(-1), kBob).error().code, ErrorCode::permission_denied);
  // The owner may lower and shorten; an admin may raise.
  ASSERT_TRUE(c.state->update(first, time_limit(600), kAlice).ok());
  ASSERT_TRUE(c.state->update(second, time_limit(600), kAlice).ok());  // It had none: shorter still.
  ASSERT_TRUE(c.state->update(first, priority(-5), kAlice).ok());
  auto up = c.state->update(second, priority(10), kRoot);
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(up->spec.priority, 10);
  EXPECT_EQ(c.job(first).spec.time_limit_s, 600);
  EXPECT_EQ(c.last_event(second).event, "updated");
  EXPECT_EQ(c.last_event(second).by, "root");
  EXPECT_EQ(c.last_event(second).reason, "priority 10");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(second).queue_position, 1);
  EXPECT_EQ(c.job(first).queue_position, 2);
  ASSERT_TRUE(c.report(running, 0).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(second).state, JobState::assigned);
  EXPECT_EQ(c.job(first).state, JobState::pending);
}

TEST(JobControl, AnUpdateChecksTheWarningSignalAndDependencies) {
  Control c;
  c.add_node("n1");
  const std::string done = c.submit({{"command", {"x"}}, {"devices", 8}});
  c.state->schedule_pass();
  c.run_to_end(done, 1);
  const std::string id = c.submit(
      {{"command", {"x"}}, {"devices", 8}, {"time_limit_s", 600}, {"signal", {{"name", "USR1"}, {"before_s", 120}}}});
  ASSERT_TRUE(c.state->hold(id, kAlice).ok());
  auto r = c.state->update(id, time_limit(60), kAlice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "time_limit_s");
  api::JobUpdate deps;
  deps.after_ok = std::vector<std::string>{done};
  r = c.state->update(id, deps, kAlice);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::conflict);  // It failed: the job could never start.
  deps.after_ok = std::vector<std::string>{"j-00000077"};
  EXPECT_EQ(c.state->update(id, deps, kAlice).error().field, "after_ok");
  deps.after_ok.reset();
  deps.after_not_ok = std::vector<std::string>{done};
  ASSERT_TRUE(c.state->update(id, deps, kAlice).ok());
  EXPECT_EQ(c.job(id).held_by, "alice");  // Still held.
  ASSERT_TRUE(c.state->release(id, kAlice).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(id).state, JobState::assigned);
}

TEST(JobControl, ARequeueIsANewAttemptThatUsesNoRetry) {
  Control c;
  c.add_node("n1");
  const std::string id = c.submit({{"command", {"x"}}, {"devices", 8}, {"max_retries", 1}});
  EXPECT_EQ(c.state->requeue(id, kAlice).error().code, ErrorCode::conflict);  // Pending.
  c.state->schedule_pass();
  ASSERT_TRUE(c.report(id, std::nullopt).ok());
  EXPECT_EQ(c.state->requeue(id, kBob).error().code, ErrorCode::permission_denied);
  auto r = c.state->requeue(id, kAlice);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, JobState::pending);
  EXPECT_EQ(r->attempt, 1);
  EXPECT_EQ(r->requeues, 1);
  EXPECT_EQ(r->reason, "requeued by alice");
  EXPECT_EQ(c.last_event(id).event, "requeued");
  EXPECT_EQ(c.last_event(id).by, "alice");
  EXPECT_EQ(c.last_event(id).attempt, 0);
  // Its tasks are stopped as for a cancel: out of the desired state, cards fenced until gone.
  std::vector<api::Assignment> desired;
  ASSERT_TRUE(
      c.state->watch_desired("n1", -1, [&](const Result<api::DesiredState>& d) { desired = d->assignments; }).ok());
  EXPECT_TRUE(desired.empty());
  api::TaskReport killed;
  killed.assignment_id = api::assignment_id(id, 0, 0);
  killed.state = api::TaskState::exited;
  killed.signal = 15;
  ASSERT_TRUE(c.state->report(api::ReportRequest{"n1", {killed}}, "").ok());
  c.state->schedule_pass();
  ASSERT_EQ(c.job(id).state, JobState::assigned);
  // The attempt fails: its one retry is still there.
  ASSERT_TRUE(c.report(id, std::nullopt).ok());
  ASSERT_TRUE(c.report(id, 3).ok());
  EXPECT_EQ(c.job(id).state, JobState::pending);
  EXPECT_EQ(c.job(id).attempt, 2);
  c.state->schedule_pass();
  c.run_to_end(id, 0);
  EXPECT_EQ(c.job(id).state, JobState::succeeded);
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

TEST(JobControlApi, UpdateBodiesAreCheckedAndNamed) {
  Harness h(tokens_from("admintok admin root\nalicetok user alice\n"));
  const std::string id = h.submit({{"command", {"x"}}, {"priority", 5}}, "alicetok")["id"];
  auto patch = [&](const json& body, const std::string& token) {
    return h.client->Patch(("/v1/jobs/" + id).c_str(), h.auth(token), body.dump(), "application/json");
  };
  auto r = patch({{"priority", 2000}}, "alicetok");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "priority") << r->body;
  r = patch({{"devices", 1}}, "alicetok");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "devices") << r->body;
  EXPECT_EQ(patch(json::object(), "alicetok")->status, 400);
  EXPECT_EQ(patch({{"priority", 6}}, "alicetok")->status, 403);
  r = patch({{"priority", 1}, {"name", "smaller"}}, "alicetok");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Harness::body(r)["spec"]["priority"], 1);
  EXPECT_EQ(Harness::body(r)["name"], "smaller");
  EXPECT_EQ(patch({{"priority", 6}}, "admintok")->status, 200);
  EXPECT_EQ(h.post("/v1/jobs/" + id + "/requeue", json::object(), "alicetok")->status, 409);
}

TEST(JobControlApi, SignalNamesAreCheckedAndNamed) {
  Harness h;
  const std::string id = h.submit({{"command", {"x"}}})["id"];
  auto expect_field = [&](const json& body, const std::string& field) {
    auto r = h.post("/v1/jobs/" + id + "/signal", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(Harness::body(r)["error"].value("field", ""), field) << r->body;
  };
  expect_field({{"name", "KILL"}}, "name");
  expect_field({{"name", 10}}, "name");
  expect_field(json::object(), "name");
  expect_field({{"name", "USR1"}, {"pid", 1}}, "pid");
  auto r = h.post("/v1/jobs/" + id + "/signal", {{"name", "USR1"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
}

}  // namespace
}  // namespace tessel::scheduler::testing
