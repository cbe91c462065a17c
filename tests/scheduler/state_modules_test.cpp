// The scheduler state's feature modules on their own, without a ClusterState:
// the job and node tables (JobTable, NodeTable), projects (ProjectTable), parked
// long polls (LongPolls), pass pacing (PassPacing), preemption claims
// (PreemptionClaims), master ports (MasterPorts) and the version census kept across
// changes (VersionWatch).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tessel/scheduler/job_table.hpp"
#include "tessel/scheduler/long_polls.hpp"
#include "tessel/scheduler/master_ports.hpp"
#include "tessel/scheduler/node_table.hpp"
#include "tessel/scheduler/pass_pacing.hpp"
#include "tessel/scheduler/preemption_claims.hpp"
#include "tessel/scheduler/project_table.hpp"
#include "tessel/scheduler/version_skew.hpp"

namespace tessel::scheduler {
namespace {

using namespace std::chrono_literals;

// Each poll's answer lands in `answers` as "<label>:<version>" (or "<label>:error").
LongPolls::Done answer_into(std::vector<std::string>& answers, const std::string& label) {
  return [&answers, label](const Result<api::DesiredState>& r) {
    answers.push_back(label + ":" + (r ? std::to_string(r->version) : "error"));
  };
}

TEST(LongPolls, ParksByNodeAndHandsEachBackOnce) {
  FakeClock clock;
  LongPolls polls(0, 2000, clock);
  std::vector<std::string> answers;
  const uint64_t a = polls.park("n1", answer_into(answers, "a"));
  const uint64_t b = polls.park("n1", answer_into(answers, "b"));
  polls.park("n2", answer_into(answers, "c"));
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(polls.waiting(), 3);
  EXPECT_EQ(polls.nodes(), (std::vector<std::string>{"n1", "n2"}));

  auto taken = polls.take("n1", a);
  ASSERT_TRUE(taken);
  (*taken)(api::DesiredState{7, {}, 0});
  EXPECT_FALSE(polls.take("n1", a));  // Already answered.
  EXPECT_FALSE(polls.take("n3", b));  // Not that node's.
  EXPECT_EQ(polls.waiting(), 2);

  for (auto& done : polls.take_all("n1")) done(api::DesiredState{8, {}, 0});
  for (auto& done : polls.take_all("n2")) done(Error::unauthenticated("revoked"));
  EXPECT_TRUE(polls.take_all("n2").empty());
  EXPECT_EQ(answers, (std::vector<std::string>{"a:7", "b:8", "c:error"}));
  EXPECT_EQ(polls.waiting(), 0);
  EXPECT_TRUE(polls.nodes().empty());
}

TEST(LongPolls, ShedsPastItsLimitAndCountsWhatItShed) {
  FakeClock clock;
  LongPolls polls(2, 1500, clock);
  std::vector<std::string> answers;
  ASSERT_TRUE(polls.admit());
  polls.park("n1", answer_into(answers, "a"));
  ASSERT_TRUE(polls.admit());
  polls.park("n2", answer_into(answers, "b"));
  EXPECT_FALSE(polls.admit());
  clock.advance_ms(120'000);
  EXPECT_FALSE(polls.admit());
  EXPECT_EQ(polls.shed_total(), 2u);
  EXPECT_EQ(polls.poll_after_ms(), 1500);
  polls.take_all("n1");
  EXPECT_TRUE(polls.admit());  // Room again.
  EXPECT_EQ(polls.shed_total(), 2u);
}

TEST(LongPolls, NoLimitAdmitsEveryPoll) {
  FakeClock clock;
  LongPolls polls(0, 2000, clock);
  std::vector<std::string> answers;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(polls.admit());
    polls.park("n" + std::to_string(i), answer_into(answers, "x"));
  }
  EXPECT_EQ(polls.waiting(), 100);
  EXPECT_EQ(polls.shed_total(), 0u);
}

TEST(PassPacing, RunsAPassForEveryChangeWhileCardsAreFree) {
  PassPacing pacing(1s);
  const PassPacing::TimePoint t0{};
  EXPECT_FALSE(pacing.due());
  pacing.mark_dirty(/*capacity=*/false);
  ASSERT_TRUE(pacing.due());
  pacing.take_dirty();
  EXPECT_FALSE(pacing.due());
  EXPECT_TRUE(pacing.begin_pass(t0 + 10s));
  pacing.end_pass(/*any_free_card=*/true);
  pacing.mark_dirty(false);
  EXPECT_TRUE(pacing.begin_pass(t0 + 10s + 1ms));  // Cards free: a new job may fit.
  EXPECT_FALSE(pacing.skipped());
}

TEST(PassPacing, SkipsSubmissionOnlyPassesWhileTheClusterIsFull) {
  PassPacing pacing(1s);
  const PassPacing::TimePoint t0{};
  ASSERT_TRUE(pacing.begin_pass(t0 + 10s));
  pacing.end_pass(/*any_free_card=*/false);
  pacing.mark_dirty(/*capacity=*/false);  // A submission.
  EXPECT_FALSE(pacing.begin_pass(t0 + 10s + 100ms));
  EXPECT_TRUE(pacing.skipped());
  pacing.take_dirty();
  pacing.mark_dirty(false);
  EXPECT_FALSE(pacing.due());  // While skipped, only capacity wakes the thread...
  EXPECT_FALSE(pacing.begin_pass(t0 + 10s + 900ms));
  EXPECT_TRUE(pacing.begin_pass(t0 + 11s));  // ...or a full pass once full_pass_every has passed.
  EXPECT_FALSE(pacing.skipped());
  EXPECT_EQ(pacing.full_pass_every(), 1s);
}

TEST(PassPacing, ACapacityChangeEndsTheSkipping) {
  PassPacing pacing(1s);
  const PassPacing::TimePoint t0{};
  ASSERT_TRUE(pacing.begin_pass(t0 + 10s));
  pacing.end_pass(false);
  pacing.mark_dirty(false);
  ASSERT_FALSE(pacing.begin_pass(t0 + 10s + 1ms));
  pacing.mark_dirty(/*capacity=*/true);  // Cards freed.
  EXPECT_TRUE(pacing.due());
  EXPECT_TRUE(pacing.begin_pass(t0 + 10s + 2ms));
}

TEST(PreemptionClaims, KeepsClaimsBySequenceAndTheEarliestRetry) {
  PreemptionClaims claims;
  api::Allocation a;
  a.node = "n1";
  a.module_ids = {0, 1};
  claims.put(5, {{a}, {"j-1"}});
  claims.put(9, {{a}, {"j-2", "j-3"}});
  EXPECT_TRUE(claims.contains(5));
  EXPECT_FALSE(claims.contains(6));
  int seen = 0;
  for (auto it = claims.begin(); it != claims.end();) {
    ++seen;
    it = it->first == 5 ? claims.erase(it) : std::next(it);
  }
  EXPECT_EQ(seen, 2);
  EXPECT_FALSE(claims.contains(5));
  EXPECT_EQ(claims.begin()->second.victims, (std::vector<std::string>{"j-2", "j-3"}));

  EXPECT_FALSE(claims.take_retry_due(1000));
  claims.retry_at(5000);
  claims.retry_at(3000);  // The earliest wins.
  claims.retry_at(4000);
  EXPECT_FALSE(claims.take_retry_due(2999));
  EXPECT_TRUE(claims.take_retry_due(3000));
  EXPECT_FALSE(claims.take_retry_due(9000));  // Once.
  claims.retry_at(100);
  claims.clear_retry();
  EXPECT_FALSE(claims.take_retry_due(9000));
}

api::NodeInventory inventory(const std::string& driver, const std::string& firmware, int cards) {
  api::NodeInventory inv;
  inv.driver_version = driver;
  for (int i = 0; i < cards; ++i) {
    api::Device d;
    d.model = "HL-225";
    d.firmware_version = firmware;
    inv.devices.push_back(d);
  }
  return inv;
}

TEST(VersionWatch, FollowsNodesAsTheyChangeAndGo) {
  VersionWatch watch;
  const auto a = inventory("1.17.0", "fw1", 8);
  const auto b = inventory("1.16.0", "fw1", 8);
  watch.note("n1", &a);
  watch.note("n2", &a);
  EXPECT_EQ(watch.skew(), (std::map<std::string, bool>{{"HL-225", false}}));
  watch.note("n2", &b);  // n2's driver changed: counted once, under its new version.
  EXPECT_EQ(watch.skew().at("HL-225"), true);
  watch.note("n2", &a);
  EXPECT_EQ(watch.skew().at("HL-225"), false);
  watch.note("n1", &b);
  watch.note("n1", nullptr);  // n1 went: its cards are no longer counted.
  EXPECT_EQ(watch.skew().at("HL-225"), false);
  watch.note("n2", nullptr);
  EXPECT_TRUE(watch.skew().empty());
}

JobEntry entry_of(const std::string& id) {
  JobEntry e;
  e.job.id = id;
  return e;
}

TEST(JobTable, QueuesPointIntoTheTableAndLoseWhatItErases) {
  JobTable t;
  EXPECT_EQ(t.reserve_seq(), 1);
  EXPECT_EQ(t.reserve_seq(3), 2);
  EXPECT_EQ(t.next_seq(), 5);
  t.restored_seq(41);
  EXPECT_EQ(t.next_seq(), 42);
  t.restored_seq(7);  // Lower: no change.
  EXPECT_EQ(t.next_seq(), 42);

  t.put(10, entry_of("j-10"));
  t.put(11, entry_of("j-11"));
  t.put(12, entry_of("j-12"));
  t.queue(10);
  t.hold_back(11);
  EXPECT_EQ(t.pending().size(), 1u);
  EXPECT_EQ(t.pending().at(10), &t.at(10));
  EXPECT_EQ(t.waiting().at(11)->job.id, "j-11");
  t.queue(11);  // Its dependencies are met: out of waiting, into pending.
  EXPECT_TRUE(t.waiting().empty());
  EXPECT_EQ(t.pending().size(), 2u);

  t.put(10, entry_of("j-10b"));  // Replaced: still queued, at the same entry.
  EXPECT_EQ(t.pending().at(10)->job.id, "j-10b");
  t.erase(10);
  EXPECT_EQ(t.pending().count(10), 0u);
  EXPECT_EQ(t.find(10), t.end());
  t.dequeue(11);
  EXPECT_TRUE(t.pending().empty());
  EXPECT_EQ(t.size(), 2u);
  EXPECT_THROW(t.queue(99), std::out_of_range);  // Only jobs in the table are queued.
}

TEST(JobTable, ArrayParentsKeepTheirCountsUntilErased) {
  JobTable t;
  EXPECT_FALSE(t.has_arrays());
  t.put(256, entry_of("j-1"));
  ArrayCounts& counts = t.add_array(256, 10, 3);
  counts.states[static_cast<size_t>(api::JobState::pending)] = 10;
  EXPECT_TRUE(t.has_arrays());
  EXPECT_TRUE(t.is_array(256));
  EXPECT_FALSE(t.is_array(257));  // An element is not a parent.
  EXPECT_EQ(t.array(257), nullptr);
  const JobTable& view = t;
  ASSERT_NE(view.array(256), nullptr);
  EXPECT_EQ(view.array(256)->count, 10);
  EXPECT_EQ(view.array(256)->parallel, 3);
  EXPECT_EQ(view.array(256)->states[static_cast<size_t>(api::JobState::pending)], 10);
  t.erase(256);  // Pruned with its last elements: its counts go with it.
  EXPECT_FALSE(t.is_array(256));
  EXPECT_FALSE(t.has_arrays());
}

TEST(NodeTable, NodesRegistrationsAndFences) {
  NodeTable t;
  t.upsert("n1").rec.address = "10.0.0.1";
  EXPECT_TRUE(t.contains("n1"));
  EXPECT_EQ(t.at("n1").rec.address, "10.0.0.1");
  EXPECT_FALSE(t.contains("n2"));

  t.begin_registration("n2");
  EXPECT_TRUE(t.registering("n2"));
  EXPECT_FALSE(t.contains("n2"));  // Not a node until its registration is written.
  t.end_registration("n2");
  EXPECT_FALSE(t.registering("n2"));

  Fence f;
  f.id = "j-1/0/r0";
  f.job_id = "j-1";
  f.allocation.node = "n1";
  t.fence(f);
  EXPECT_TRUE(t.any_fence_on("n1"));
  EXPECT_FALSE(t.any_fence_on("n2"));
  t.unfence(f.id);
  EXPECT_TRUE(t.fences().empty());
  t.erase("n1");
  EXPECT_EQ(t.size(), 0u);
}

TEST(ProjectTable, TheDefaultProjectExistsUntilStoredOtherwise) {
  ProjectTable t;
  EXPECT_TRUE(t.exists(api::kDefaultProject));
  EXPECT_FALSE(t.stored(api::kDefaultProject));
  EXPECT_EQ(t.get(api::kDefaultProject)->shares, 1);
  EXPECT_FALSE(t.get("vision"));
  EXPECT_EQ(t.all().size(), 1u);

  api::Project vision{"vision", 3, {}, 5};
  vision.quotas["HL-225"].guaranteed = 8;
  t.put(vision);
  t.put(api::Project{"nlp", 2, {}, std::nullopt});
  EXPECT_EQ(t.shares(), (std::map<std::string, int64_t>{{api::kDefaultProject, 1}, {"nlp", 2}, {"vision", 3}}));
  EXPECT_TRUE(t.any_quota());
  EXPECT_TRUE(t.may_preempt("vision"));
  EXPECT_FALSE(t.may_preempt("nlp"));
  EXPECT_EQ(t.max_active_jobs_per_user("vision"), 5);
  EXPECT_EQ(t.max_active_jobs_per_user("nlp"), std::nullopt);
  EXPECT_EQ(t.all().size(), 3u);
  EXPECT_EQ(t.stored_count(), 2u);

  t.put(api::Project{api::kDefaultProject, 4, {}, std::nullopt});  // Stored with other settings: wins.
  EXPECT_EQ(t.shares().at(api::kDefaultProject), 4);
  t.erase("vision");
  EXPECT_FALSE(t.exists("vision"));
  EXPECT_FALSE(t.any_quota());
}

TEST(MasterPorts, LowestFreePortPerNodeWithinOnePass) {
  MasterPorts ports(29500, 29502);
  EXPECT_EQ(ports.take("n1", {}), 29500);
  EXPECT_EQ(ports.take("n1", {}), 29501);       // Given out earlier in the pass.
  EXPECT_EQ(ports.take("n2", {29500}), 29501);  // Another node: its own running jobs count.
  EXPECT_EQ(ports.take("n1", {29502}), 0);      // The range is used up on n1.
  EXPECT_EQ(ports.take("n2", {29500}), 29502);
}

}  // namespace
}  // namespace tessel::scheduler
