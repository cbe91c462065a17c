// Accounting and history: GET /v1/usage (by project and by user, models, window
// clipping, bad input, who sees what, project= and user= filters), usage across a restart and the pruning of
// old jobs with a FakeClock (old ended jobs gone from memory and the store, their
// usage kept, recent and still-needed ones kept), and the per-project metrics.
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using api::JobState;
constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;

TokenTable usage_tokens() {
  auto t = parse_tokens(
      "admintok admin root\n"
      "alicetok user alice vision,nlp\n"
      "caroltok user carol vision\n"
      "bobtok user bob\n");
  EXPECT_TRUE(t.ok());
  return *t;
}

api::NodeInventory cards_of(const std::string& model) {
  api::NodeInventory inv;
  inv.vendor = api::Vendor::habana;
  inv.driver_version = "1.18.0";
  for (int i = 0; i < 8; ++i) {
    api::Device d;
    d.index = d.module_id = i;
    d.model = model;
    d.healthy = true;
    inv.devices.push_back(d);
  }
  return inv;
}

// Drives jobs through a Harness's ClusterState as an agent would: placement by the
// scheduler thread, task reports, the FakeClock for durations.
struct Acct {
  explicit Acct(StateOptions so = {}, std::optional<TokenTable> tokens = usage_tokens()) : h(std::move(tokens), so) {
    for (const char* p : {"vision", "nlp"}) EXPECT_TRUE(state().put_project(api::Project{p, 1, {}}).ok());
  }
  ClusterState& state() { return h.service->state(); }

  void add_node(const std::string& name, const std::string& model) {
    api::RegisterRequest r;
    r.node = name;
    r.address = "10.0.0.1";
    r.inventory = cards_of(model);
    ASSERT_TRUE(state().register_node(r, "").ok());
  }
  std::string submit(const std::string& user, const std::string& project, int devices, const std::string& model = "",
                     json extra = json::object()) {
    json spec = {{"command", {"x"}}, {"devices", devices}, {"project", project}};
    if (!model.empty()) spec["model"] = model;
    spec.update(extra);
    auto parsed = api::parse_job_spec(spec);
    EXPECT_TRUE(parsed) << spec.dump();
    auto j = state().submit(*parsed, user);
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? j->id : "";
  }
  api::Job job(const std::string& id) { return state().job(id).value(); }
  bool wait_assigned(const std::string& id) {
    return eventually([&] { return state().job(id)->state == JobState::assigned; });
  }
  void report(const std::string& id, std::optional<int> code) {
    const api::Job j = job(id);
    api::TaskReport t;
    t.assignment_id = api::assignment_id(j.id, j.attempt, 0);
    t.state = code ? api::TaskState::exited : api::TaskState::running;
    t.exit_code = code;
    ASSERT_TRUE(state().report(api::ReportRequest{j.allocations.at(0).node, {t}}, "").ok());
  }
  // Places `id`, runs it from now for `seconds` (the clock moves) and ends it with `code`.
  void run(const std::string& id, int64_t seconds, int code = 0) {
    ASSERT_TRUE(wait_assigned(id)) << id;
    report(id, std::nullopt);
    ASSERT_EQ(job(id).state, JobState::running);
    h.clock.advance_ms(seconds * 1000);
    report(id, code);
    ASSERT_NE(job(id).state, JobState::running);  // Ended, or requeued for a retry.
  }
  std::string run_job(const std::string& user, const std::string& project, int devices, int64_t seconds,
                      const std::string& model = "") {
    const std::string id = submit(user, project, devices, model);
    run(id, seconds);
    return id;
  }
  // GET /v1/usage?QUERY as `token`: the rows, or the whole answer when not 200.
  json usage(const std::string& query, const std::string& token = "admintok", int status = 200) {
    auto r = h.get("/v1/usage" + query, token);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, status) << query << " -> " << r->body;
    json b = Harness::body(r);
    return status == 200 ? b["usage"] : b;
  }

  Harness h;
};

json row(const char* key, const std::string& who, const std::string& model, double card_seconds, int64_t jobs) {
  return {{key, who}, {"model", model}, {"card_seconds", card_seconds}, {"jobs", jobs}};
}

std::string at(int64_t ms) { return api::format_rfc3339(ms); }

TEST(Usage, ByProjectAndByUserPerModelSorted) {
  Acct a;
  a.add_node("n1", "HL-225");
  a.add_node("n2", "HL-325");
  a.run_job("alice", "vision", 4, 100, "HL-225");
  a.run_job("carol", "vision", 2, 10, "HL-325");
  a.run_job("bob", "default", 1, 50, "HL-225");
  a.run_job("alice", "nlp", 8, 5, "HL-325");
  a.run_job("alice", "vision", 1, 20, "HL-225");
  EXPECT_EQ(a.usage(""),
            json::array({row("project", "default", "HL-225", 50, 1), row("project", "nlp", "HL-325", 40, 1),
                         row("project", "vision", "HL-225", 420, 2), row("project", "vision", "HL-325", 20, 1)}));
  EXPECT_EQ(a.usage("?by=user"),
            json::array({row("user", "alice", "HL-225", 420, 2), row("user", "alice", "HL-325", 40, 1),
                         row("user", "bob", "HL-225", 50, 1), row("user", "carol", "HL-325", 20, 1)}));
  // The answer names its window: by default the last 30 days up to now.
  auto r = Harness::body(a.h.get("/v1/usage", "admintok"));
  EXPECT_EQ(r["by"], "project");
  EXPECT_EQ(r["until"], at(a.h.clock.now_ms()));
  EXPECT_EQ(r["since"], at(a.h.clock.now_ms() - 30 * kDayMs));
}

TEST(Usage, RetriesCountAsOneJobWithEveryAttemptsCardSeconds) {
  Acct a;
  a.add_node("n1", "HL-225");
  const std::string id = a.submit("alice", "vision", 2, "", {{"max_retries", 1}});
  a.run(id, 30, /*code=*/1);  // Fails, requeued: attempt 0 used 60 card-seconds.
  ASSERT_EQ(a.job(id).attempt, 1);
  a.run(id, 10);
  EXPECT_EQ(a.job(id).state, JobState::succeeded);
  EXPECT_EQ(a.usage(""), json::array({row("project", "vision", "HL-225", 80, 1)}));
}

TEST(Usage, AWindowCountsTheCardSecondsInsideIt) {
  Acct a;
  a.add_node("n1", "HL-225");
  const int64_t t0 = a.h.clock.now_ms();
  a.run_job("alice", "vision", 2, 1000);  // [t0, t0 + 1000 s), 2 cards.
  const std::string q = "?since=" + at(t0 + 200'000) + "&until=" + at(t0 + 700'000);
  EXPECT_EQ(a.usage(q), json::array({row("project", "vision", "HL-225", 1000, 1)}));
  // Overlapping its start, its end; all of it; none of it.
  EXPECT_EQ(a.usage("?since=" + at(t0 - 5000'000) + "&until=" + at(t0 + 100'000))[0]["card_seconds"], 200.0);
  EXPECT_EQ(a.usage("?since=" + at(t0 + 900'000))[0]["card_seconds"], 200.0);
  EXPECT_EQ(a.usage("?since=" + at(t0 - 1))[0]["card_seconds"], 2000.0);
  EXPECT_EQ(a.usage("?since=" + at(t0 + 1000'000) + "&until=" + at(t0 + 2000'000)), json::array());
  EXPECT_EQ(a.usage("?until=" + at(t0)), json::array());
  // Offsets other than Z mean the same instant.
  EXPECT_EQ(
      a.usage("?since=" + at(t0 + 200'000).substr(0, 19) + "%2B00:00&until=" + at(t0 + 700'000))[0]["card_seconds"],
      1000.0);
  // Running jobs are not counted until their attempt ends.
  const std::string running = a.submit("alice", "vision", 4);
  ASSERT_TRUE(a.wait_assigned(running));
  a.report(running, std::nullopt);
  a.h.clock.advance_ms(100'000);
  EXPECT_EQ(a.usage("")[0]["card_seconds"], 2000.0);
}

TEST(Usage, BadQueryIs400NamingTheField) {
  Acct a;
  struct Case {
    std::string query, field;
  };
  for (const Case& c : std::vector<Case>{{"?by=node", "by"},
                                         {"?by=", "by"},
                                         {"?since=yesterday", "since"},
                                         {"?since=2026-11-01", "since"},
                                         {"?until=2026-13-01T00:00:00Z", "until"},
                                         {"?until=1764547200", "until"},
                                         {"?since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", "since"},
                                         {"?since=2026-11-01T00:00:00Z&until=2026-11-01T00:00:00Z", "since"}}) {
    json b = a.usage(c.query, "admintok", 400);
    EXPECT_EQ(b["error"]["field"], c.field) << c.query << " -> " << b.dump();
  }
  a.usage("", "", 401);
}

TEST(Usage, UsersSeeTheirOwnJobsAndTheirProjectsAdminsEverything) {
  Acct a;
  a.add_node("n1", "HL-225");
  a.run_job("alice", "vision", 1, 10);
  a.run_job("carol", "vision", 1, 20);
  a.run_job("bob", "default", 1, 40);
  a.run_job("bob", "nlp", 1, 80);  // An admin's submission in bob's name.
  a.run_job("root", "default", 1, 160);
  EXPECT_EQ(a.usage("", "admintok").size(), 3u);
  EXPECT_EQ(a.usage("?by=user", "admintok").size(), 4u);
  // alice: her projects vision and nlp, every user's jobs in them.
  EXPECT_EQ(a.usage("", "alicetok"),
            json::array({row("project", "nlp", "HL-225", 80, 1), row("project", "vision", "HL-225", 30, 2)}));
  EXPECT_EQ(a.usage("?by=user", "alicetok"),
            json::array({row("user", "alice", "HL-225", 10, 1), row("user", "bob", "HL-225", 80, 1),
                         row("user", "carol", "HL-225", 20, 1)}));
  // bob: the default project (he has no projects column) and his own job in nlp.
  EXPECT_EQ(a.usage("", "bobtok"),
            json::array({row("project", "default", "HL-225", 200, 2), row("project", "nlp", "HL-225", 80, 1)}));
  // carol: vision only; bob's and root's jobs elsewhere are not hers to see.
  EXPECT_EQ(a.usage("?by=user", "caroltok"),
            json::array({row("user", "alice", "HL-225", 10, 1), row("user", "carol", "HL-225", 20, 1)}));
}

// project= and user= narrow the report; for a user they narrow what they may see and
// never widen it.
TEST(Usage, ProjectAndUserFiltersNarrowWhatOneMaySee) {
  Acct a;
  a.add_node("n1", "HL-225");
  a.run_job("alice", "vision", 1, 10);
  a.run_job("carol", "vision", 1, 20);
  a.run_job("alice", "nlp", 1, 40);
  a.run_job("bob", "default", 1, 80);
  EXPECT_EQ(a.usage("?project=vision"), json::array({row("project", "vision", "HL-225", 30, 2)}));
  EXPECT_EQ(a.usage("?by=user&project=vision"),
            json::array({row("user", "alice", "HL-225", 10, 1), row("user", "carol", "HL-225", 20, 1)}));
  EXPECT_EQ(a.usage("?user=alice"),
            json::array({row("project", "nlp", "HL-225", 40, 1), row("project", "vision", "HL-225", 10, 1)}));
  EXPECT_EQ(a.usage("?user=alice&project=nlp"), json::array({row("project", "nlp", "HL-225", 40, 1)}));
  EXPECT_EQ(a.usage("?user=carol&project=nlp"), json::array());
  EXPECT_EQ(a.usage("?project=nobody-ran-here"), json::array());
  EXPECT_EQ(a.usage("?user=nobody"), json::array());
  // carol (vision only) asking for nlp or for bob's usage sees nothing of them.
  EXPECT_EQ(a.usage("?project=nlp", "caroltok"), json::array());
  EXPECT_EQ(a.usage("?user=bob", "caroltok"), json::array());
  EXPECT_EQ(a.usage("?user=alice", "caroltok"), json::array({row("project", "vision", "HL-225", 10, 1)}));
  // bob sees his own jobs whatever the project, and nothing of alice's outside his projects.
  EXPECT_EQ(a.usage("?user=bob", "bobtok"), json::array({row("project", "default", "HL-225", 80, 1)}));
  EXPECT_EQ(a.usage("?user=alice", "bobtok"), json::array());
  // Bad values: 400 naming the field.
  for (const auto& [query, field] :
       std::vector<std::pair<std::string, std::string>>{{"?project=", "project"},
                                                        {"?project=-vision", "project"},
                                                        {"?project=" + std::string(65, 'p'), "project"},
                                                        {"?project=a%20b", "project"},
                                                        {"?user=", "user"},
                                                        {"?user=a%20b", "user"},
                                                        {"?user=" + std::string(129, 'u'), "user"}}) {
    json b = a.usage(query, "admintok", 400);
    EXPECT_EQ(b["error"]["field"], field) << query << " -> " << b.dump();
  }
}

TEST(Usage, SurvivesARestartAndThePruningOfItsJobs) {
  const testkit::TempDir dir("tessel-usage");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  StateOptions so;
  so.history_days = 1;
  ServiceOptions opts = test_service_options();
  opts.state = so;
  std::string old_id;
  json before;
  auto usage = [](Service& svc) {
    UsageQuery q;
    q.since_ms = 0;
    q.until_ms = int64_t{1} << 50;
    json out = json::array();
    for (const auto& r : svc.state().usage(q)) out.push_back(row("project", r.key, r.model, r.card_seconds, r.jobs));
    return out;
  };
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    ASSERT_TRUE(svc.state().put_project(api::Project{"vision", 1, {}}).ok());
    api::RegisterRequest r;
    r.node = "n1";
    r.address = "10.0.0.1";
    r.inventory = cards_of("HL-225");
    ASSERT_TRUE(svc.state().register_node(r, "").ok());
    auto spec = api::parse_job_spec({{"command", {"x"}}, {"devices", 4}, {"project", "vision"}});
    auto j = svc.state().submit(*spec, "alice");
    ASSERT_TRUE(j.ok());
    old_id = j->id;
    ASSERT_TRUE(eventually([&] { return svc.state().job(old_id)->state == JobState::assigned; }));
    api::TaskReport task;
    task.assignment_id = api::assignment_id(old_id, 0, 0);
    ASSERT_TRUE(svc.state().report(api::ReportRequest{"n1", {task}}, "").ok());
    clock.advance_ms(250'000);
    task.state = api::TaskState::exited;
    task.exit_code = 0;
    ASSERT_TRUE(svc.state().report(api::ReportRequest{"n1", {task}}, "").ok());
    before = usage(svc);
    ASSERT_EQ(before, json::array({row("project", "vision", "HL-225", 1000, 1)}));
  }
  for (int round = 0; round < 2; ++round) {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    EXPECT_EQ(usage(svc), before) << "round " << round;
    EXPECT_GT(svc.state().project_usage()["vision"].usage, 0) << "fair share remembers it too";
    if (round == 0) {
      ASSERT_TRUE(svc.state().job(old_id));
      clock.advance_ms(2 * kDayMs);
      auto pruned = svc.state().prune_history(500);
      ASSERT_TRUE(pruned.ok());
      EXPECT_EQ(*pruned, 1u);
      EXPECT_FALSE(svc.state().job(old_id));
      EXPECT_EQ(usage(svc), before);
    } else {
      EXPECT_FALSE(svc.state().job(old_id)) << "pruned from the store too";
    }
  }
}

// A database from before accounting: its ended jobs get their usage records at start.
TEST(Usage, JobsEndedBeforeAccountingAreBackfilledOnce) {
  const testkit::TempDir dir("tessel-usage-old");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    WriteBatch b;
    NodeRecord n;
    n.name = "n1";
    n.address = "10.0.0.1";
    n.inventory = cards_of("HL-225");
    b.nodes = {n};
    api::Job j;
    j.id = make_job_id(1);
    j.user = "alice";
    j.spec = *api::parse_job_spec({{"command", {"x"}}, {"devices", 4}});
    j.state = JobState::succeeded;
    j.submitted_at_ms = clock.now_ms() - 200'000;
    j.started_at_ms = clock.now_ms() - 100'000;
    j.finished_at_ms = clock.now_ms() - 50'000;
    j.allocations = {api::Allocation{"n1", 0, {0, 1, 2, 3}, {0, 1, 2, 3}}};
    b.jobs = {j};
    ASSERT_TRUE((*store)->write(b).ok());
  }
  for (int round = 0; round < 2; ++round) {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, test_service_options());
    ASSERT_TRUE(svc.start().ok());
    UsageQuery q;
    q.since_ms = 0;
    q.until_ms = clock.now_ms();
    const auto rows = svc.state().usage(q);
    ASSERT_EQ(rows.size(), 1u) << "round " << round;
    EXPECT_EQ(rows[0].key, "default");
    EXPECT_EQ(rows[0].model, "HL-225");
    EXPECT_EQ(rows[0].card_seconds, 200.0);
    svc.stop();
    auto snap = (*store)->load();
    ASSERT_TRUE(snap.ok());
    EXPECT_EQ(snap->usage.size(), 1u);
  }
}

TEST(History, PrunesOnlyEndedJobsOlderThanTheLimitInBatches) {
  StateOptions so;
  so.history_days = 2;
  Acct a(so);
  a.add_node("n1", "HL-225");
  const std::string kept_dep = a.run_job("alice", "vision", 4, 10);
  const std::string old1 = a.run_job("alice", "vision", 4, 10);
  const std::string old2 = a.run_job("bob", "default", 4, 10);
  const std::string failed = a.submit("bob", "default", 4);
  a.run(failed, 10, /*code=*/3);
  ASSERT_EQ(a.job(failed).state, JobState::failed);
  // A job running for days, and one that cannot start until it ends but depends on kept_dep.
  const std::string running = a.submit("alice", "vision", 8);
  ASSERT_TRUE(a.wait_assigned(running));
  a.report(running, std::nullopt);
  const std::string dependent = a.submit("alice", "vision", 8, "", {{"after_ok", {kept_dep}}});
  a.h.clock.advance_ms(3 * kDayMs);
  const std::string recent = a.submit("bob", "default", 8);
  auto admin = Principal{"root", Role::admin, "", {}};
  ASSERT_TRUE(a.state().cancel(recent, admin).ok());
  const json usage_before = a.usage("?since=" + at(0));

  auto pruned = a.state().prune_history(2);  // A batch of at most 2.
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 2u);
  pruned = a.state().prune_history(500);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1u);
  EXPECT_EQ(*a.state().prune_history(500), 0u);
  for (const auto& id : {old1, old2, failed}) {
    EXPECT_FALSE(a.state().job(id)) << id;
    EXPECT_EQ(a.h.get("/v1/jobs/" + id, "admintok")->status, 404) << id;
  }
  for (const auto& id : {kept_dep, running, dependent, recent}) EXPECT_TRUE(a.state().job(id)) << id;
  // Gone from the store as well; the usage records stay.
  auto snap = a.h.store->load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->jobs.size(), 4u);
  EXPECT_EQ(snap->usage.size(), 4u);
  EXPECT_EQ(a.usage("?since=" + at(0)), usage_before);
  // A dependency on a pruned job is an unknown job: 400 naming the field.
  auto r = a.h.post("/v1/jobs", {{"command", {"x"}}, {"after_any", {old1}}}, "admintok");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(Harness::body(r)["error"]["field"], "after_any");
  // Once its dependent ended, the old dependency goes too.
  ASSERT_TRUE(a.state().cancel(dependent, admin).ok());
  EXPECT_EQ(*a.state().prune_history(500), 1u);
  EXPECT_FALSE(a.state().job(kept_dep));
}

// The Service's background loop prunes by itself (here every 10 ms of real time),
// deciding what is old by the FakeClock.
TEST(History, TheServicePrunesInTheBackground) {
  auto store = open_sqlite_store(":memory:");
  ASSERT_TRUE(store.ok());
  FakeClock clock;
  ServiceOptions opts = test_service_options();
  opts.history_tick_ms = 10;
  opts.state.history_days = 1;
  Service svc(**store, clock, std::nullopt, opts);
  ASSERT_TRUE(svc.start().ok());
  auto spec = api::parse_job_spec({{"command", {"x"}}, {"devices", 1}});
  auto j = svc.state().submit(*spec, "alice");
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE(svc.state().cancel(j->id, Principal{"alice", Role::user, "", {}}).ok());
  clock.advance_ms(kDayMs - 1);
  const std::string kept = svc.state().submit(*spec, "alice")->id;
  clock.advance_ms(2);
  EXPECT_TRUE(eventually([&] { return !svc.state().job(j->id); }));
  EXPECT_TRUE(svc.state().job(kept));
}

TEST(History, ZeroDaysKeepsEverything) {
  StateOptions so;
  so.history_days = 0;
  Acct a(so);
  a.add_node("n1", "HL-225");
  const std::string id = a.run_job("alice", "vision", 1, 1);
  a.h.clock.advance_ms(10'000 * kDayMs);
  EXPECT_EQ(*a.state().prune_history(500), 0u);
  EXPECT_TRUE(a.state().job(id));
}

TEST(History, AFailedWriteDeletesNothing) {
  StateOptions so;
  so.history_days = 1;
  Acct a(so);
  a.add_node("n1", "HL-225");
  const std::string id = a.run_job("alice", "vision", 1, 1);
  a.h.clock.advance_ms(2 * kDayMs);
  a.h.store->fail_writes = true;
  EXPECT_FALSE(a.state().prune_history(500).ok());
  EXPECT_TRUE(a.state().job(id));
  a.h.store->fail_writes = false;
  EXPECT_EQ(*a.state().prune_history(500), 1u);
}

// The metric lines of `name` in GET /metrics, by their labels ("{...}") -> value.
std::map<std::string, std::string> metric(Harness& h, const std::string& name) {
  std::map<std::string, std::string> out;
  std::istringstream in(h.get("/metrics")->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const auto space = line.rfind(' ');
    out[line.substr(name.size(), space - name.size())] = line.substr(space + 1);
  }
  return out;
}

TEST(Usage, ProjectMetricsHaveTheRightValues) {
  Acct a;
  api::Project vision{"vision", 2, {}};
  vision.quotas["HL-225"] = api::Quota{4, 8};
  vision.quotas["*"] = api::Quota{0, std::nullopt};
  ASSERT_TRUE(a.state().put_project(vision).ok());
  a.add_node("n1", "HL-225");
  a.run_job("alice", "vision", 2, 100);
  const std::string holding = a.submit("alice", "vision", 4);
  ASSERT_TRUE(a.wait_assigned(holding));
  a.submit("alice", "vision", 8);  // Pending: over the max.
  a.submit("bob", "default", 8);   // Pending: no room.
  using M = std::map<std::string, std::string>;
  EXPECT_EQ(metric(a.h, "tessel_project_cards_held"),
            (M{{R"({project="vision",model="*"})", "4"}, {R"({project="vision",model="HL-225"})", "4"}}));
  EXPECT_EQ(metric(a.h, "tessel_project_cards_guaranteed"),
            (M{{R"({project="vision",model="*"})", "0"}, {R"({project="vision",model="HL-225"})", "4"}}));
  EXPECT_EQ(metric(a.h, "tessel_project_cards_max"), (M{{R"({project="vision",model="HL-225"})", "8"}}));
  EXPECT_EQ(metric(a.h, "tessel_project_pending_jobs"),
            (M{{R"({project="default"})", "1"}, {R"({project="nlp"})", "0"}, {R"({project="vision"})", "1"}}));
  const M factors = metric(a.h, "tessel_project_fairshare_factor");
  EXPECT_EQ(factors.at(R"({project="default"})"), "1");
  EXPECT_LT(std::stod(factors.at(R"({project="vision"})")), 1.0);
  EXPECT_EQ(metric(a.h, "tessel_usage_card_seconds_total"), (M{{R"({project="vision",model="HL-225"})", "200"}}));
}

}  // namespace
}  // namespace tessel::scheduler::testing
