// Issue 29: while a node pulls a job's image (before any rank starts) the job, running
// since its agent launched the task, has reason "pulling image REF on NODE", and its
// history gets one event when the pull starts; the ranks' start clears the reason. A pull that fails ends the job
// naming the image, and frees its cards at once.
#include <gtest/gtest.h>

#include "state_harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

const std::string kImage = "docker.io/library/debian:12";

// Registers `name` with eight cards and podman: it runs images.
void add_image_node(ClusterState& state, const std::string& name) {
  api::RegisterRequest r;
  r.node = name;
  r.address = "10.0.0.2";
  r.inventory = gaudi_cards();
  r.inventory.containers = "podman 4.3.1, runc";
  ASSERT_TRUE(state.register_node(r, "").ok());
}

// The report of `id`'s only rank: running (pulling its image when `pulling`), or ended.
void report(StateHarness& h, const std::string& id, api::TaskState state, bool pulling = false,
            const std::string& message = "") {
  const api::Job j = h.job(id);
  ASSERT_EQ(j.allocations.size(), 1u);
  api::TaskReport t;
  t.assignment_id = api::assignment_id(j.id, j.attempt, 0);
  t.state = state;
  t.message = message;
  if (pulling) t.phase = api::kTaskPhasePullingImage;
  ASSERT_TRUE(h.state->report(api::ReportRequest{j.allocations[0].node, {t}}, "").ok());
}

std::vector<std::string> event_names(StateHarness& h, const std::string& id) {
  std::vector<std::string> out;
  const std::vector<api::JobEvent> events = h.state->job_events(id).value();
  for (const auto& e : events) out.push_back(e.event);
  return out;
}

TEST(ImagePull, APullIsTheJobsReasonAndOneEventUntilTheRanksStart) {
  StateHarness h;
  add_image_node(*h.state, "n3");
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}, {"image", kImage}});
  h.state->schedule_pass();
  ASSERT_EQ(h.job(id).state, api::JobState::assigned);

  h.clock.advance_ms(1000);
  report(h, id, api::TaskState::running);  // The agent launched the task's supervisor.
  ASSERT_EQ(h.job(id).state, api::JobState::running);
  h.clock.advance_ms(1000);
  report(h, id, api::TaskState::running, /*pulling=*/true);
  EXPECT_EQ(h.job(id).reason, "pulling image " + kImage + " on n3");
  report(h, id, api::TaskState::running, /*pulling=*/true);  // Agents repeat their reports.
  h.clock.advance_ms(1000);
  report(h, id, api::TaskState::running, /*pulling=*/true);
  ASSERT_EQ(event_names(h, id), (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image"}));
  const api::JobEvent pull = h.state->job_events(id)->back();
  EXPECT_EQ(pull.state, api::JobState::running);
  EXPECT_EQ(pull.reason, "pulling image " + kImage + " on n3");
  EXPECT_EQ(pull.nodes, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(pull.attempt, 0);

  h.clock.advance_ms(1000);
  report(h, id, api::TaskState::running);  // The ranks started.
  EXPECT_EQ(h.job(id).state, api::JobState::running);
  EXPECT_EQ(h.job(id).reason, "");
  EXPECT_EQ(event_names(h, id), (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image"}));
}

// An agent's first report may already show the pull (it restarted meanwhile): the job
// starts and the pull is its next event.
TEST(ImagePull, AFirstReportThatPullsStartsTheJobThenSaysSo) {
  StateHarness h;
  add_image_node(*h.state, "n3");
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}, {"image", kImage}});
  h.state->schedule_pass();
  report(h, id, api::TaskState::running, /*pulling=*/true);
  EXPECT_EQ(h.job(id).state, api::JobState::running);
  EXPECT_EQ(h.job(id).reason, "pulling image " + kImage + " on n3");
  EXPECT_EQ(event_names(h, id), (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image"}));
}

// The reason and the event are stored with the job: a restarted scheduler still shows them.
TEST(ImagePull, ThePullsReasonAndEventSurviveARestart) {
  const testkit::TempDir dir("tessel-image-pull");
  const std::string db = dir.str("s.db");
  std::string id;
  {
    StateHarness h(db);
    add_image_node(*h.state, "n3");
    id = h.submit({{"command", {"x"}}, {"devices", 8}, {"image", kImage}});
    h.state->schedule_pass();
    report(h, id, api::TaskState::running, /*pulling=*/true);
  }
  StateHarness h(db);
  EXPECT_EQ(h.job(id).reason, "pulling image " + kImage + " on n3");
  EXPECT_EQ(event_names(h, id), (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image"}));
}

// A bare job's running report has no phase, and a phase the scheduler does not know
// changes nothing.
TEST(ImagePull, NoPhaseOrAnUnknownOneIsAPlainRunningRank) {
  StateHarness h;
  add_image_node(*h.state, "n3");
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}});
  h.state->schedule_pass();
  const api::Job j = h.job(id);
  api::TaskReport t;
  t.assignment_id = api::assignment_id(j.id, j.attempt, 0);
  t.phase = "warming_up";
  ASSERT_TRUE(h.state->report(api::ReportRequest{"n3", {t}}, "").ok());
  EXPECT_EQ(h.job(id).state, api::JobState::running);
  EXPECT_EQ(h.job(id).reason, "");
  EXPECT_EQ(event_names(h, id), (std::vector<std::string>{"submitted", "assigned", "running"}));
}

// A pull that fails: the job fails naming the image and podman's word, and its cards
// go at once to the next job.
TEST(ImagePull, AFailedPullFailsTheJobAndFreesItsCards) {
  StateHarness h;
  add_image_node(*h.state, "n3");
  const std::string id = h.submit({{"command", {"x"}}, {"devices", 8}, {"image", kImage}});
  const std::string next = h.submit({{"command", {"x"}}, {"devices", 8}});
  h.state->schedule_pass();
  ASSERT_EQ(h.job(id).state, api::JobState::assigned);
  ASSERT_EQ(h.job(next).state, api::JobState::pending);
  report(h, id, api::TaskState::running, /*pulling=*/true);
  const std::string why = "pulling image " + kImage + ": manifest unknown";
  report(h, id, api::TaskState::failed_to_start, false, why);
  EXPECT_EQ(h.job(id).state, api::JobState::failed);
  EXPECT_EQ(h.job(id).reason, "failed to start: " + why);
  EXPECT_EQ(event_names(h, id),
            (std::vector<std::string>{"submitted", "assigned", "running", "pulling_image", "failed"}));
  h.state->schedule_pass();
  EXPECT_EQ(h.job(next).state, api::JobState::assigned);
  EXPECT_EQ(h.job(next).allocations.at(0).node, "n3");
}

}  // namespace
}  // namespace tessel::scheduler::testing
