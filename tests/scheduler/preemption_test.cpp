// Preemption through ClusterState on a FakeClock: a job within its project's
// guarantee stops a borrowing preemptible job, waits for its tasks to end (their
// cards fenced, then held for it) and takes its cards; the victim is requeued
// with "preempted by", a preemptions count and no retry used, sees
// TESSEL_PREEMPTED through its next assignment, and all of it survives a restart,
// the preempting job's claim on the victims' cards included. A victim with a warning
// signal gets it first and is stopped after its lead.
// Then a simulation: simulated agents that obey the kill grace, a borrowing
// project filling the cluster, and a project with a guarantee of 8 cards that
// gets them within kill_grace + 1 s every time, with no card ever in two live tasks.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using api::JobState;

constexpr int64_t kMinRuntimeMs = 60'000;

StateOptions preempt_options(int64_t min_runtime_ms) {
  StateOptions so;
  so.preempt_min_runtime_ms = min_runtime_ms;
  so.heartbeat_timeout_ms = int64_t{1} << 50;  // Nodes never time out here.
  return so;
}

struct Cluster : StateHarness {
  explicit Cluster(const std::string& db = ":memory:", int64_t min_runtime_ms = kMinRuntimeMs)
      : StateHarness(db, preempt_options(min_runtime_ms)) {}
  void add_projects() {
    api::Project vision{"vision", 1, {{"HL-225", api::Quota{8, std::nullopt}}}};
    ASSERT_TRUE(state->put_project(vision).ok());
    ASSERT_TRUE(state->put_project(api::Project{"batch", 1, {}}).ok());
  }
  // Reports every rank of `id`'s current attempt running, or ended (exit code or signal).
  void report(const std::string& id, const std::string& how) {
    const api::Job j = job(id);
    for (const auto& a : j.allocations) {
      api::TaskReport t;
      t.assignment_id = api::assignment_id(j.id, j.attempt, a.rank);
      if (how == "running") {
        t.state = api::TaskState::running;
      } else {
        t.state = api::TaskState::exited;
        if (how == "SIGTERM")
          t.signal = 15;
        else
          t.exit_code = std::stoi(how);
      }
      ASSERT_TRUE(state->report(api::ReportRequest{a.node, {t}}, "").ok());
    }
  }
  // Reports an assignment id's task ended by SIGTERM (the job has moved on to a new attempt).
  void report_killed(const std::string& node, const std::string& assignment_id) {
    api::TaskReport t;
    t.assignment_id = assignment_id;
    t.state = api::TaskState::exited;
    t.signal = 15;
    ASSERT_TRUE(state->report(api::ReportRequest{node, {t}}, "").ok());
  }
  std::vector<api::Assignment> desired(const std::string& node) {
    std::vector<api::Assignment> out;
    auto r = state->watch_desired(node, -1, [&](const Result<api::DesiredState>& d) { out = d->assignments; });
    EXPECT_TRUE(r.ok());
    return out;
  }
};

json spec(int devices, const std::string& project, bool preemptible = false, int max_retries = 0) {
  json j = {{"command", {"x"}},   {"devices", devices},         {"model", "HL-225"},
            {"project", project}, {"max_retries", max_retries}, {"kill_grace_s", 5}};
  if (preemptible) j["preemptible"] = true;
  return j;
}

// An admin relabels the claimed node so that the preempting job's selector no longer
// matches it: the claim is dropped at the next pass (its record says so), and the job
// waits as any job whose selector no ready node matches.
TEST(Preemption, AClaimOnANodeRelabelledAwayFromTheJobsSelectorIsDropped) {
  Cluster c;
  c.add_node("n1");
  c.add_projects();
  ASSERT_TRUE(c.state->set_node_labels("n1", api::LabelChange{{{"pool", "gold"}}, {}}).ok());
  const std::string b = c.submit(spec(8, "batch", /*preemptible=*/true));
  c.state->schedule_pass();
  c.report(b, "running");
  c.clock.advance_ms(kMinRuntimeMs);
  json gold = spec(8, "vision");
  gold["node_selector"] = {{"pool", "gold"}};
  const std::string a = c.submit(gold);
  c.state->schedule_pass();
  ASSERT_EQ(c.job(a).reason, "preempting " + b + ": waiting for their tasks to end");
  ASSERT_FALSE(c.job(a).preempt_claim.empty());

  ASSERT_TRUE(c.state->set_node_labels("n1", api::LabelChange{{{"pool", "tin"}}, {}}).ok());
  c.report_killed("n1", api::assignment_id(b, 0, 0));
  c.state->schedule_pass();
  const api::Job after = c.job(a);
  EXPECT_EQ(after.state, JobState::pending);
  EXPECT_TRUE(after.preempt_claim.empty());
  EXPECT_TRUE(after.preempt_victims.empty());
  EXPECT_EQ(after.reason, "no ready node with pool=gold");
}

TEST(Preemption, AJobWithinItsGuaranteeTakesABorrowersCardsOnceItsTaskEnds) {
  Cluster c;
  c.add_node("n1");
  c.add_projects();
  const std::string b = c.submit(spec(8, "batch", /*preemptible=*/true));
  c.state->schedule_pass();
  c.report(b, "running");
  ASSERT_EQ(c.job(b).state, JobState::running);
  c.clock.advance_ms(kMinRuntimeMs);

  const std::string a = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  // b is stopped (its assignment leaves n1's desired state: the agent kills it) and requeued.
  api::Job victim = c.job(b);
  EXPECT_EQ(victim.state, JobState::pending);
  EXPECT_EQ(victim.reason, "preempted by " + a);
  EXPECT_EQ(victim.preemptions, 1);
  EXPECT_EQ(victim.last_preempted_at_ms, c.clock.now_ms());
  EXPECT_EQ(victim.last_preempted_by, a);
  EXPECT_EQ(api::to_json(victim)["last_preempted_at"], api::format_rfc3339(c.clock.now_ms()));
  EXPECT_EQ(api::to_json(victim)["last_preempted_by"], a);
  EXPECT_FALSE(api::to_json(c.job(a)).contains("last_preempted_at"));
  EXPECT_EQ(victim.attempt, 1);
  EXPECT_TRUE(c.desired("n1").empty());
  EXPECT_EQ(c.job(a).state, JobState::pending);
  EXPECT_EQ(c.job(a).reason, "preempting " + b + ": waiting for their tasks to end");
  EXPECT_EQ(c.state->stats().preemptions_total, 1u);

  // Its cards stay fenced while its task may still run: nothing starts on them.
  const std::string small = c.submit(spec(1, "batch"));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::pending);
  EXPECT_EQ(c.job(small).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason.rfind("preempted by " + a + "; ", 0), 0u) << c.job(b).reason;

  // The task ends (SIGTERM): the cards go to a, not to the smaller job nor to b.
  c.report_killed("n1", b + ".0.0");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
  EXPECT_EQ(c.job(small).state, JobState::pending);
  EXPECT_EQ(c.job(b).state, JobState::pending);

  // Once a ends, b runs again and its assignment says it was preempted.
  c.report(a, "running");
  c.report(a, "0");
  c.state->schedule_pass();
  ASSERT_EQ(c.job(b).state, JobState::assigned);
  auto d = c.desired("n1");
  auto it = std::find_if(d.begin(), d.end(), [&](const api::Assignment& x) { return x.job_id == b; });
  ASSERT_NE(it, d.end());
  EXPECT_EQ(it->id, b + ".1.0");
  EXPECT_EQ(it->preemptions, 1);
  EXPECT_EQ(api::to_json(*it)["preemptions"], 1);
  EXPECT_EQ(api::to_json(c.job(b))["preemptions"], 1);
}

TEST(Preemption, APreemptionUsesNoRetry) {
  Cluster c;
  c.add_node("n1");
  c.add_projects();
  const std::string b = c.submit(spec(8, "batch", true, /*max_retries=*/1));
  c.state->schedule_pass();
  c.report(b, "running");
  c.clock.advance_ms(kMinRuntimeMs);
  const std::string a = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  c.report_killed("n1", b + ".0.0");
  c.state->schedule_pass();
  c.report(a, "running");
  c.report(a, "0");
  c.state->schedule_pass();
  // Attempt 1 fails: its one retry is still there.
  ASSERT_EQ(c.job(b).attempt, 1);
  c.report(b, "running");
  c.report(b, "3");
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).attempt, 2);
  c.state->schedule_pass();
  c.report(b, "running");
  c.report(b, "3");
  EXPECT_EQ(c.job(b).state, JobState::failed);
  EXPECT_EQ(c.job(b).preemptions, 1);
}

TEST(Preemption, NotBeforeTheMinimumRuntimeThenWithoutAnyOtherChange) {
  Cluster c;
  c.add_node("n1");
  c.add_projects();
  const std::string b = c.submit(spec(8, "batch", true));
  c.state->schedule_pass();
  c.report(b, "running");
  c.clock.advance_ms(kMinRuntimeMs / 2);
  const std::string a = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::running);
  EXPECT_EQ(c.job(a).state, JobState::pending);
  // The liveness tick asks for a pass once b passes the minimum runtime.
  c.clock.advance_ms(kMinRuntimeMs / 2);
  c.state->check_liveness();
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason, "preempted by " + a);
}

TEST(Preemption, NeverForAJobOutsideItsGuaranteeNorOfANonPreemptibleJob) {
  Cluster c;
  c.add_node("n1");
  c.add_node("n2");
  c.add_projects();
  const std::string b1 = c.submit(spec(8, "batch", true)), b2 = c.submit(spec(8, "batch", false));
  c.state->schedule_pass();
  c.report(b1, "running");
  c.report(b2, "running");
  c.clock.advance_ms(kMinRuntimeMs);
  // 16 cards: past vision's guarantee of 8.
  json big = spec(8, "vision");
  big["nodes"] = 2;
  const std::string a = c.submit(big);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b1).state, JobState::running);
  EXPECT_EQ(c.job(b2).state, JobState::running);
  EXPECT_EQ(c.state->stats().preemptions_total, 0u);
  // Within it: only the preemptible one goes.
  ASSERT_TRUE(c.state->cancel(a, Principal{"alice", Role::admin, "", {}}).ok());
  const std::string a2 = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b1).state, JobState::pending);
  EXPECT_EQ(c.job(b2).state, JobState::running);
  EXPECT_EQ(c.job(a2).reason, "preempting " + b1 + ": waiting for their tasks to end");
}

TEST(Preemption, TheVictimsStateSurvivesARestart) {
  testkit::TempDir dir("tessel-preempt");
  const std::string db = dir.str("s.db");
  std::string a, b;
  int64_t preempted_at = 0;
  {
    Cluster c(db);
    c.add_node("n1");
    c.add_projects();
    b = c.submit(spec(8, "batch", true));
    c.state->schedule_pass();
    c.report(b, "running");
    c.clock.advance_ms(kMinRuntimeMs);
    a = c.submit(spec(8, "vision"));
    c.state->schedule_pass();
    ASSERT_EQ(c.job(b).state, JobState::pending);
    preempted_at = c.clock.now_ms();
  }
  Cluster c(db);
  const api::Job victim = c.job(b);
  EXPECT_EQ(victim.state, JobState::pending);
  EXPECT_EQ(victim.preemptions, 1);
  EXPECT_EQ(victim.last_preempted_at_ms, preempted_at);
  EXPECT_EQ(victim.last_preempted_by, a);
  EXPECT_EQ(victim.attempt, 1);
  EXPECT_EQ(victim.reason, "preempted by " + a);
  // Its cards are still fenced until the agent reports the task gone; then a starts.
  // (The node is restored as alive; a registration listing no tasks would end the fence.)
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason.rfind("preempted by " + a + "; ", 0), 0u) << c.job(b).reason;
  c.report_killed("n1", b + ".0.0");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
}

// A victim with a warning signal (Slurm's --signal) is sent it when the preemption is
// decided and keeps running for min(before_s, preempt_warning_max); only then does its
// stop begin (SIGTERM and its kill grace, as for any victim).
json warned_spec(int64_t before_s) {
  json j = spec(8, "batch", /*preemptible=*/true);
  j["time_limit_s"] = 7200;
  j["signal"] = {{"name", "USR1"}, {"before_s", before_s}};
  return j;
}

// Runs warned victim b on n1 past the minimum runtime and submits vision job a.
std::pair<std::string, std::string> warned_preemption(Cluster& c, int64_t before_s) {
  c.add_node("n1");
  c.add_projects();
  const std::string b = c.submit(warned_spec(before_s));
  c.state->schedule_pass();
  c.report(b, "running");
  c.clock.advance_ms(kMinRuntimeMs);
  const std::string a = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  return {a, b};
}

TEST(Preemption, AVictimWithAWarningSignalGetsItFirstAndIsStoppedAfterItsLead) {
  Cluster c;
  const auto [a, b] = warned_preemption(c, 30);
  // Warned, still running and still desired: its agent delivers the signal.
  api::Job victim = c.job(b);
  EXPECT_EQ(victim.state, JobState::running);
  ASSERT_EQ(victim.signals.size(), 1u);
  EXPECT_EQ(victim.signals[0].name, "USR1");
  auto d = c.desired("n1");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].signals, victim.signals);
  EXPECT_EQ(victim.events.back().event, "signalled");
  EXPECT_EQ(victim.events.back().reason, "SIGUSR1 to every rank: preempted by " + a + ", stopped in 30s");
  EXPECT_EQ(c.job(a).reason, "preempting " + b + ": waiting for their tasks to end");
  EXPECT_EQ(c.state->stats().preemptions_total, 1u);

  c.clock.advance_ms(29'000);
  c.state->check_liveness();
  c.state->schedule_pass();
  EXPECT_EQ(c.job(b).state, JobState::running);
  EXPECT_EQ(c.job(a).state, JobState::pending);

  c.clock.advance_ms(1'000);
  c.state->check_liveness();
  victim = c.job(b);
  EXPECT_EQ(victim.state, JobState::pending);
  EXPECT_EQ(victim.reason, "preempted by " + a);
  EXPECT_EQ(victim.preemptions, 1);
  EXPECT_TRUE(c.desired("n1").empty());
  c.report_killed("n1", b + ".0.0");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
}

TEST(Preemption, TheWarningLeadIsCappedByPreemptWarningMax) {
  Cluster c;
  const auto [a, b] = warned_preemption(c, 3000);  // Default cap: 60 s.
  EXPECT_EQ(c.job(b).events.back().reason, "SIGUSR1 to every rank: preempted by " + a + ", stopped in 60s");
  c.clock.advance_ms(59'999);
  c.state->check_liveness();
  EXPECT_EQ(c.job(b).state, JobState::running);
  c.clock.advance_ms(1);
  c.state->check_liveness();
  EXPECT_EQ(c.job(b).state, JobState::pending);
}

// The preempting job is cancelled during the lead: its claim goes, and the warned
// victim keeps running.
TEST(Preemption, AWarnedVictimKeepsRunningWhenThePreemptionIsDropped) {
  Cluster c;
  const auto [a, b] = warned_preemption(c, 30);
  ASSERT_TRUE(c.state->cancel(a, Principal{"alice", Role::admin, "", {}}).ok());
  c.state->schedule_pass();
  c.clock.advance_ms(60'000);
  c.state->check_liveness();
  EXPECT_EQ(c.job(b).state, JobState::running);
  EXPECT_EQ(c.job(b).preemptions, 0);
  EXPECT_EQ(c.desired("n1").size(), 1u);
}

// A restart during the lead: the claim is restored from the preempting job's record,
// and the victim, still on the claimed cards, is stopped at the first liveness check.
TEST(Preemption, AWarnedVictimIsStoppedAtOnceAfterARestart) {
  testkit::TempDir dir("tessel-preempt-warn");
  const std::string db = dir.str("s.db");
  std::string a, b;
  {
    Cluster c(db);
    std::tie(a, b) = warned_preemption(c, 30);
    ASSERT_EQ(c.job(b).state, JobState::running);
  }
  Cluster c(db);
  EXPECT_EQ(c.job(b).state, JobState::running);
  c.state->check_liveness();
  EXPECT_EQ(c.job(b).state, JobState::pending);
  EXPECT_EQ(c.job(b).reason, "preempted by " + a);
  c.report_killed("n1", b + ".0.0");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
}

// A preemption in flight is stored in the preempting job's record: after a restart
// the cards its victims free are still held for it as they free up, so a job of
// higher priority that fits in part of them does not take them first.
TEST(Preemption, AClaimInFlightSurvivesARestart) {
  testkit::TempDir dir("tessel-preempt-claim");
  const std::string db = dir.str("s.db");
  std::string a, b1, b2, rival;
  {
    Cluster c(db);
    c.add_node("n1");
    c.add_projects();
    b1 = c.submit(spec(4, "batch", true));
    b2 = c.submit(spec(4, "batch", true));
    c.state->schedule_pass();
    c.report(b1, "running");
    c.report(b2, "running");
    c.clock.advance_ms(kMinRuntimeMs);
    a = c.submit(spec(8, "vision"));
    c.state->schedule_pass();
    ASSERT_EQ(c.job(b1).state, JobState::pending);
    ASSERT_EQ(c.job(b2).state, JobState::pending);
    json shown = api::to_json(c.job(a));
    EXPECT_EQ(shown["preempting"]["victims"], json({b1, b2})) << shown.dump();
    EXPECT_EQ(shown["preempting"]["allocations"][0]["module_ids"].size(), 8u) << shown.dump();
    json rival_spec = spec(4, "batch", true);
    rival_spec["priority"] = 100;  // Ahead of a in the queue: only the claim keeps it off a's cards.
    rival = c.submit(rival_spec);
    c.state->schedule_pass();
    ASSERT_EQ(c.job(rival).state, JobState::pending);
  }
  Cluster c(db);
  EXPECT_EQ(c.job(a).preempt_victims, (std::vector<std::string>{b1, b2}));
  EXPECT_EQ(c.job(a).reason, "preempting " + b1 + ", " + b2 + ": waiting for their tasks to end");
  // One victim's task ends (the report lists the node's tasks: the other still runs):
  // its 4 cards are held for a, not given to the rival.
  api::TaskReport gone, still;
  gone.assignment_id = b1 + ".0.0";
  gone.state = api::TaskState::exited;
  gone.signal = 15;
  still.assignment_id = b2 + ".0.0";
  still.state = api::TaskState::running;
  ASSERT_TRUE(c.state->report(api::ReportRequest{"n1", {gone, still}}, "").ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(rival).state, JobState::pending);
  EXPECT_EQ(c.job(a).state, JobState::pending);
  c.report_killed("n1", b2 + ".0.0");
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::assigned);
  EXPECT_EQ(c.job(rival).state, JobState::pending);
  // Placed: the claim is over, in memory and in the store.
  EXPECT_TRUE(c.job(a).preempt_claim.empty());
  EXPECT_FALSE(api::to_json(c.job(a)).contains("preempting"));
  auto snap = c.store->load();
  ASSERT_TRUE(snap.ok());
  for (const auto& j : snap->jobs) EXPECT_TRUE(j.preempt_claim.empty()) << j.id;
}

// A claim the scheduler drops (its nodes can no longer take the job) leaves the
// job's stored record in the same pass, so a restart does not resume it.
TEST(Preemption, ADroppedClaimLeavesTheStoredRecordAtOnce) {
  testkit::TempDir dir("tessel-preempt-drop");
  Cluster c(dir.str("s.db"));
  c.add_node("n1");
  c.add_projects();
  const std::string b1 = c.submit(spec(4, "batch", true));
  const std::string b2 = c.submit(spec(4, "batch", true));
  c.state->schedule_pass();
  c.report(b1, "running");
  c.report(b2, "running");
  c.clock.advance_ms(kMinRuntimeMs);
  const std::string a = c.submit(spec(8, "vision"));
  c.state->schedule_pass();
  auto stored_claim = [&] {
    auto snap = c.store->load();
    EXPECT_TRUE(snap.ok());
    for (const auto& j : snap->jobs)
      if (j.id == a) return j.preempt_claim.size();
    return size_t{0};
  };
  ASSERT_EQ(stored_claim(), 1u);  // One allocation: the 8 cards of n1.
  ASSERT_TRUE(c.state->set_drained("n1", true).ok());
  c.state->schedule_pass();
  EXPECT_EQ(c.job(a).state, JobState::pending);
  EXPECT_TRUE(c.job(a).preempt_claim.empty());
  EXPECT_EQ(stored_claim(), 0u);
}

// --- Simulation ---

// One node's agent: starts what its desired state lists, kills (SIGTERM, then
// SIGKILL after the job's kill_grace_s) what it no longer lists, reports changes.
struct SimAgent {
  struct Task {
    std::string job_id;
    std::vector<int> cards;
    int64_t end_at = 0;    // When it exits by itself.
    int64_t term_at = -1;  // When it got SIGTERM; -1: not yet.
    int64_t die_at = 0;    // After SIGTERM: when it ends (at most the grace later).
  };
  std::string node;
  std::map<std::string, Task> live;
  std::set<std::string> started;
};

TEST(PreemptionSimulation, AGuaranteeOf8CardsIsMetWithinKillGracePlusOneSecond) {
  constexpr int64_t kTickMs = 200, kGraceS = 5, kHours = 1;
  Cluster c(":memory:", /*min_runtime_ms=*/0);
  std::vector<SimAgent> agents(4);
  for (size_t i = 0; i < agents.size(); ++i) {
    agents[i].node = "n" + std::to_string(i);
    c.add_node(agents[i].node);
  }
  c.add_projects();
  std::mt19937 rng(1201);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::map<std::string, int64_t> runtime_ms;  // By job id.
  int batch_pending = 0;
  std::set<std::string> batch;  // batch's jobs not yet ended.
  std::string asking;           // vision's job waiting for its cards.
  int64_t asked_at = 0, next_ask = 10 * 60'000 + c.clock.now_ms();
  std::vector<int64_t> waits;
  int double_booked = 0, ignored_term = 0;
  const int64_t end = c.clock.now_ms() + kHours * 3600'000;
  while (c.clock.now_ms() < end) {
    c.clock.advance_ms(kTickMs);
    const int64_t now = c.clock.now_ms();
    // batch keeps 20 preemptible jobs queued: singles to whole nodes, and gangs.
    if (now % 2000 == 0) {  // Topped up every 2 s.
      batch_pending = 0;
      for (auto it = batch.begin(); it != batch.end();) {
        const JobState st = c.job(*it).state;
        batch_pending += st == JobState::pending;
        it = api::is_terminal(st) ? batch.erase(it) : std::next(it);
      }
      for (; batch_pending < 20; ++batch_pending) {
        json s = spec(1 << pick(0, 3), "batch", true);
        s["kill_grace_s"] = kGraceS;
        if (pick(0, 4) == 0) s["nodes"] = 2;
        const std::string id = c.submit(s);
        batch.insert(id);
        runtime_ms[id] = pick(5, 40) * 60'000;
      }
    }
    if (asking.empty() && now >= next_ask) {
      json s = spec(8, "vision");
      if (pick(0, 1) == 0) {  // Also as a gang of 2 x 4.
        s["devices"] = 4;
        s["nodes"] = 2;
      }
      asking = c.submit(s);
      runtime_ms[asking] = 2 * 60'000;
      asked_at = now;
    }
    c.state->schedule_pass();
    for (auto& ag : agents) {
      std::vector<api::TaskReport> reports;
      std::set<std::string> listed;
      for (const auto& a : c.desired(ag.node)) {
        listed.insert(a.id);
        if (!ag.started.insert(a.id).second) continue;
        for (const auto& [id, t] : ag.live)
          for (int m : a.module_ids)
            if (std::find(t.cards.begin(), t.cards.end(), m) != t.cards.end()) {
              ++double_booked;
              ADD_FAILURE() << a.id << " placed on " << ag.node << " card " << m << " while " << id << " still runs";
            }
        ag.live[a.id] = SimAgent::Task{a.job_id, a.module_ids, now + runtime_ms[a.job_id]};
        api::TaskReport r;
        r.assignment_id = a.id;
        reports.push_back(r);
        if (a.job_id == asking && a.node_rank == 0) {
          waits.push_back(now - asked_at);
          asking.clear();
          next_ask = now + runtime_ms[a.job_id] + pick(1, 4) * 60'000;
        }
      }
      for (auto it = ag.live.begin(); it != ag.live.end();) {
        SimAgent::Task& t = it->second;
        if (!listed.count(it->first) && t.term_at < 0) {
          t.term_at = now;
          const bool ignores = pick(0, 2) == 0;  // Ignores SIGTERM: killed at the grace.
          ignored_term += ignores;
          t.die_at = now + (ignores ? kGraceS * 1000 : pick(0, 20) * kTickMs);
        }
        const bool killed = t.term_at >= 0 && now >= t.die_at;
        if (killed || now >= t.end_at) {
          api::TaskReport r;
          r.assignment_id = it->first;
          r.state = api::TaskState::exited;
          if (killed)
            r.signal = now - t.term_at >= kGraceS * 1000 ? 9 : 15;
          else
            r.exit_code = 0;
          reports.push_back(r);
          it = ag.live.erase(it);
        } else {
          ++it;
        }
      }
      if (!reports.empty()) {
        // As the real agent's: a report lists every task still running, since the
        // scheduler ends a fence when its node's report does not list its task so.
        std::set<std::string> in_report;
        for (const auto& r : reports) in_report.insert(r.assignment_id);
        for (const auto& [id, t] : ag.live) {
          if (in_report.count(id)) continue;
          api::TaskReport r;
          r.assignment_id = id;
          reports.push_back(r);
        }
        ASSERT_TRUE(c.state->report(api::ReportRequest{ag.node, reports}, "").ok());
      }
    }
    c.state->check_liveness();
  }
  EXPECT_EQ(double_booked, 0);
  ASSERT_GE(waits.size(), 10u);
  EXPECT_GE(c.state->stats().preemptions_total, 5u);
  EXPECT_GT(ignored_term, 0);
  for (int64_t w : waits) EXPECT_LE(w, (kGraceS + 1) * 1000);
  std::sort(waits.begin(), waits.end());
  std::printf("vision asked %zu times; waits: median %lld ms, max %lld ms; %llu preemptions\n", waits.size(),
              static_cast<long long>(waits[waits.size() / 2]), static_cast<long long>(waits.back()),
              static_cast<unsigned long long>(c.state->stats().preemptions_total));
}

}  // namespace
}  // namespace tessel::scheduler::testing
