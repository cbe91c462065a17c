// Job arrays at the ClusterState level (no HTTP, no scheduler thread: the test runs
// each pass and reports tasks as an agent would), and through the REST API.
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

  int count(const std::string& parent, JobState st) const { return job(parent).array.value().states.at(st); }
};

json array_spec(int count, std::optional<int> parallel = std::nullopt, int devices = 1) {
  json a = {{"count", count}};
  if (parallel) a["parallel"] = *parallel;
  return {{"command", {"x"}}, {"devices", devices}, {"array", a}};
}

std::string element(const std::string& parent, int i) { return parent + "_" + std::to_string(i); }

TEST(Arrays, ASubmissionStoresTheParentAndEveryElementInOneWrite) {
  Cluster c;
  auto parent = c.try_submit(array_spec(5, 2));
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->id, "j-00000001");
  EXPECT_EQ(parent->state, JobState::pending);
  ASSERT_TRUE(parent->array);
  EXPECT_EQ(parent->array->count, 5);
  EXPECT_EQ(parent->array->parallel, 2);
  EXPECT_EQ(parent->array->states.at(JobState::pending), 5);
  for (int i = 0; i < 5; ++i) {
    const api::Job e = c.job(element(parent->id, i));
    EXPECT_EQ(e.state, JobState::pending);
    EXPECT_EQ(e.spec.array, (api::ArraySpec{5, 2}));
    EXPECT_FALSE(e.array);
  }
  EXPECT_FALSE(c.state->job(element(parent->id, 5)));
  EXPECT_EQ(c.store->load()->jobs.size(), 6u);
  // Listings show the elements, newest (highest index) first, not the parent.
  auto page = c.state->list_jobs(JobFilter{});
  ASSERT_EQ(page.jobs.size(), 5u);
  EXPECT_EQ(page.jobs.front().id, element(parent->id, 4));
  EXPECT_EQ(page.jobs.back().id, element(parent->id, 0));
  EXPECT_EQ(c.submit({{"command", {"x"}}}), "j-00000002");
  // A failed write stores nothing and uses up no element.
  c.store->fail_writes = true;
  EXPECT_FALSE(c.try_submit(array_spec(3)).ok());
  c.store->fail_writes = false;
  EXPECT_EQ(c.store->load()->jobs.size(), 7u);
  EXPECT_FALSE(c.state->job("j-00000003_0"));
  EXPECT_EQ(c.state->stats().jobs_by_state.at("pending"), 6);  // Elements count as jobs, parents do not.
}

TEST(Arrays, AtMostParallelElementsAreAssignedOrRunningAtOnce) {
  Cluster c;
  c.add_node("n1");
  const std::string p = c.submit(array_spec(6, 2));
  std::set<std::string> ended;
  for (int round = 0; round < 10 && ended.size() < 6; ++round) {
    c.state->schedule_pass();
    std::vector<std::string> active;
    for (int i = 0; i < 6; ++i) {
      const api::Job e = c.job(element(p, i));
      if (e.state == JobState::assigned || e.state == JobState::running) active.push_back(e.id);
      if (e.state == JobState::pending) EXPECT_EQ(e.reason, "array " + p + " at its parallel limit of 2") << e.id;
    }
    ASSERT_LE(active.size(), 2u);
    ASSERT_FALSE(active.empty());
    EXPECT_EQ(c.job(p).state, JobState::running);
    EXPECT_EQ(c.count(p, JobState::assigned), static_cast<int>(active.size()));
    // The lowest index first; end one of them, so the next pass may start one more.
    c.run_to_end(active.front(), 0);
    ended.insert(active.front());
    if (ended.size() < 6) EXPECT_EQ(c.job(p).state, JobState::running);  // No flap to pending before the next pass.
  }
  EXPECT_EQ(ended.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.job(element(p, i)).state, JobState::succeeded);
  EXPECT_EQ(c.job(p).state, JobState::succeeded);
  EXPECT_GT(c.job(p).finished_at_ms, 0);
  EXPECT_EQ(c.count(p, JobState::succeeded), 6);
}

TEST(Arrays, WithoutParallelEveryElementThatFitsStarts) {
  Cluster c;
  c.add_node("n1");
  const std::string p = c.submit(array_spec(10));
  EXPECT_EQ(c.job(p).array->parallel, 10);
  c.state->schedule_pass();
  EXPECT_EQ(c.count(p, JobState::assigned), 8);  // One card each, eight cards.
  EXPECT_EQ(c.job(element(p, 9)).reason.find("array"), std::string::npos);
}

TEST(Arrays, CancellingTheParentCancelsEveryElementNotYetEnded) {
  Cluster c;
  c.add_node("n1");
  const std::string p = c.submit(array_spec(4, 1));
  const std::string after_ok = c.submit({{"command", {"x"}}, {"after_ok", {p}}});
  const std::string after_any = c.submit({{"command", {"x"}}, {"after_any", {p}}});
  c.state->schedule_pass();
  c.run_to_end(element(p, 0), 0);
  c.state->schedule_pass();
  ASSERT_EQ(c.job(element(p, 1)).state, JobState::assigned);
  const Principal bob{"bob", Role::user, "", {}};
  EXPECT_EQ(c.state->cancel(p, bob).error().code, ErrorCode::permission_denied);
  const Principal alice{"alice", Role::user, "", {}};
  auto r = c.state->cancel(p, alice);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->state, JobState::cancelled);
  EXPECT_EQ(r->array->states.at(JobState::cancelled), 3);
  EXPECT_EQ(c.job(element(p, 0)).state, JobState::succeeded);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(c.job(element(p, i)).state, JobState::cancelled);
    EXPECT_EQ(c.job(element(p, i)).reason, "cancelled by alice");
  }
  EXPECT_EQ(c.job(p).reason, "0 failed, 3 cancelled of 4 elements");
  // Its dependents heard of it in the same change.
  EXPECT_EQ(c.job(after_ok).state, JobState::cancelled);
  EXPECT_EQ(c.job(after_ok).reason, "dependency " + p + " was cancelled");
  EXPECT_EQ(c.job(after_any).state, JobState::pending);
  EXPECT_EQ(c.job(after_any).reason, "");
  // Idempotent; the stored parent agrees.
  EXPECT_TRUE(c.state->cancel(p, alice).ok());
  auto stored = c.store->load();  // Named: a range-for over a temporary's member would outlive it.
  ASSERT_TRUE(stored.ok());
  for (const auto& j : stored->jobs)
    if (j.id == p) EXPECT_EQ(j.state, JobState::cancelled);
}

TEST(Arrays, DependenciesOnTheParentWaitForTheWholeArray) {
  Cluster c;
  c.add_node("n1");
  const std::string ok = c.submit(array_spec(3));
  const std::string fails = c.submit(array_spec(2));
  const std::string b = c.submit({{"command", {"x"}}, {"devices", 8}, {"after_ok", {ok}}});
  const std::string d = c.submit({{"command", {"x"}}, {"after_ok", {fails}}});
  const std::string e = c.submit({{"command", {"x"}}, {"after_not_ok", {fails}}});
  c.state->schedule_pass();
  c.run_to_end(element(ok, 0), 0);
  c.run_to_end(element(ok, 2), 0);
  EXPECT_EQ(c.job(b).reason, "waiting for " + ok);
  c.run_to_end(element(ok, 1), 0);
  EXPECT_EQ(c.job(ok).state, JobState::succeeded);
  EXPECT_EQ(c.job(b).reason, "");  // Released by the report that ended the last element.

  c.run_to_end(element(fails, 0), 0);
  c.run_to_end(element(fails, 1), 1);
  EXPECT_EQ(c.job(fails).state, JobState::failed);
  EXPECT_EQ(c.job(fails).reason, "1 failed, 0 cancelled of 2 elements");
  EXPECT_EQ(c.job(d).state, JobState::cancelled);
  EXPECT_EQ(c.job(d).reason, "dependency " + fails + " failed");
  EXPECT_EQ(c.job(e).reason, "");
}

TEST(Arrays, AnArrayWithDependenciesWaitsAsAWholeAndIsCancelledAsAWhole) {
  Cluster c;
  c.add_node("n1");
  const std::string a = c.submit({{"command", {"x"}}});
  json spec = array_spec(3);
  spec["after_ok"] = {a};
  const std::string p = c.submit(spec);
  json spec2 = array_spec(2);
  spec2["after_ok"] = {p};
  const std::string p2 = c.submit(spec2);
  EXPECT_EQ(c.job(element(p, 2)).reason, "waiting for " + a);
  c.state->schedule_pass();
  EXPECT_EQ(c.count(p, JobState::pending), 3);
  c.run_to_end(a, 1);
  // a failed: p's elements are cancelled, so p is, so p2's elements and p2 are: one change.
  EXPECT_EQ(c.job(p).state, JobState::cancelled);
  EXPECT_EQ(c.job(element(p, 1)).reason, "dependency " + a + " failed");
  EXPECT_EQ(c.job(p2).state, JobState::cancelled);
  EXPECT_EQ(c.job(element(p2, 0)).reason, "dependency " + p + " was cancelled");
}

TEST(Arrays, ElementsAndTheLimitSurviveARestart) {
  const testkit::TempDir dir("tessel-arrays");
  const std::string db = dir.str("s.db");
  std::string p;
  {
    Cluster c(db);
    c.add_node("n1");
    p = c.submit(array_spec(3, 1));
    c.state->schedule_pass();
    c.run_to_end(element(p, 0), 0);
    c.state->schedule_pass();
    ASSERT_TRUE(c.report(element(p, 1), std::nullopt).ok());
  }
  Cluster c(db);
  EXPECT_EQ(c.job(element(p, 0)).state, JobState::succeeded);
  EXPECT_EQ(c.job(element(p, 1)).state, JobState::running);
  EXPECT_EQ(c.job(element(p, 2)).state, JobState::pending);
  EXPECT_EQ(c.job(p).state, JobState::running);
  EXPECT_EQ(c.count(p, JobState::succeeded), 1);
  EXPECT_EQ(c.count(p, JobState::running), 1);
  c.state->schedule_pass();
  EXPECT_EQ(c.job(element(p, 2)).state, JobState::pending);  // Still one at a time.
  EXPECT_EQ(c.job(element(p, 2)).reason, "array " + p + " at its parallel limit of 1");
  ASSERT_TRUE(c.report(element(p, 1), 0).ok());
  c.state->schedule_pass();
  c.run_to_end(element(p, 2), 0);
  EXPECT_EQ(c.job(p).state, JobState::succeeded);
  EXPECT_EQ(c.submit({{"command", {"x"}}}), "j-00000002");
}

json indexed_spec(const std::string& indices, std::optional<int> parallel = std::nullopt) {
  json a = {{"indices", indices}};
  if (parallel) a["parallel"] = *parallel;
  return {{"command", {"x"}}, {"devices", 1}, {"array", a}};
}

// Slurm's index lists: elements are named by their own index, the limit and the
// parent's state work as for 0..N-1, and all of it survives a restart.
TEST(Arrays, IndicesNotStartingAtZeroNameTheElements) {
  const testkit::TempDir dir("tessel-arrays-indices");
  const std::string db = dir.str("s.db");
  const std::vector<int> indices = {5, 6, 7, 20, 30, 40};
  std::string p;
  {
    Cluster c(db);
    c.add_node("n1");
    auto parent = c.try_submit(indexed_spec("5-7,20-40:10", 2));
    ASSERT_TRUE(parent.ok()) << parent.error().message;
    p = parent->id;
    EXPECT_EQ(parent->array->count, 6);
    EXPECT_EQ(parent->array->states.at(JobState::pending), 6);
    EXPECT_EQ(api::to_json(*parent)["array"]["first"], element(p, 5));
    EXPECT_EQ(api::to_json(*parent)["array"]["last"], element(p, 40));
    for (int i : indices) EXPECT_EQ(c.job(element(p, i)).spec.array, (api::ArraySpec{6, 2, "5-7,20-40:10"})) << i;
    for (int i : {0, 4, 8, 21, 41}) EXPECT_FALSE(c.state->job(element(p, i))) << i;
    EXPECT_EQ(c.store->load()->jobs.size(), 7u);
    c.state->schedule_pass();
    int active = 0;
    for (int i : indices) active += c.job(element(p, i)).state == JobState::assigned;
    EXPECT_EQ(active, 2);
    c.run_to_end(element(p, 5), 0);
    c.run_to_end(element(p, 6), 0);
  }
  Cluster c(db);
  EXPECT_EQ(c.job(p).state, JobState::running);
  EXPECT_EQ(c.count(p, JobState::succeeded), 2);
  EXPECT_EQ(c.count(p, JobState::pending), 4);
  for (int round = 0; round < 3; ++round) {
    c.state->schedule_pass();
    int active = 0;
    for (int i : indices) {
      if (c.job(element(p, i)).state != JobState::assigned) continue;
      ++active;
      c.run_to_end(element(p, i), 0);
    }
    EXPECT_LE(active, 2);
  }
  EXPECT_EQ(c.job(p).state, JobState::succeeded);
  EXPECT_EQ(c.count(p, JobState::succeeded), 6);
}

TEST(Arrays, ADependencyOnOneElementWaitsForThatElementOnly) {
  Cluster c;
  c.add_node("n1");
  const std::string p = c.submit(indexed_spec("1-3"));
  const std::string b = c.submit({{"command", {"x"}}, {"devices", 8}, {"after_ok", {element(p, 2)}}});
  const std::string d = c.submit({{"command", {"x"}}, {"after_ok", {element(p, 3)}}});
  const std::string e = c.submit({{"command", {"x"}}, {"after_not_ok", {element(p, 3)}}});
  EXPECT_EQ(c.job(b).reason, "waiting for " + element(p, 2));
  c.state->schedule_pass();
  c.run_to_end(element(p, 1), 0);
  EXPECT_EQ(c.job(b).reason, "waiting for " + element(p, 2));
  c.run_to_end(element(p, 2), 0);
  EXPECT_EQ(c.job(b).reason, "");  // Released though element 3 has not ended.
  EXPECT_EQ(c.job(p).state, JobState::running);
  c.run_to_end(element(p, 3), 1);
  EXPECT_EQ(c.job(d).state, JobState::cancelled);
  EXPECT_EQ(c.job(d).reason, "dependency " + element(p, 3) + " failed");
  EXPECT_EQ(c.job(e).reason, "");
  // An element the array does not have is an unknown job.
  auto r = c.try_submit({{"command", {"x"}}, {"after_any", {element(p, 0)}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "after_any");
  EXPECT_EQ(r.error().message, "after_any: unknown job " + element(p, 0));
}

// Over HTTP: the 201 with the array, elements by id, the listing, cancel, bad input.
TEST(Arrays, RestApiShowsTheArrayAndItsElements) {
  Harness h;
  for (const auto& [bad, field] :
       {std::pair{json{{"count", 0}}, "array.count"}, std::pair{json{{"count", 10001}}, "array.count"},
        std::pair{json{{"count", 4}, {"parallel", 0}}, "array.parallel"},
        std::pair{json{{"parallel", 2}}, "array.count"}, std::pair{json{{"indices", "9-5"}}, "array.indices"},
        std::pair{json{{"indices", "0-10000"}}, "array.indices"}, std::pair{json{{"indices", ""}}, "array.indices"},
        std::pair{json{{"indices", "1,,2"}}, "array.indices"}, std::pair{json{{"indices", 7}}, "array.indices"},
        std::pair{json{{"indices", "1-3"}, {"count", 4}}, "array.count"},
        std::pair{json{{"indices", "1-3"}, {"parallel", 0}}, "array.parallel"}}) {
    auto r = h.post("/v1/jobs", {{"command", {"x"}}, {"array", bad}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad.dump();
    EXPECT_EQ(Harness::body(r)["error"]["field"], field) << bad.dump();
  }
  EXPECT_EQ(Harness::body(h.get("/v1/jobs"))["jobs"].size(), 0u);  // Nothing stored.
  // A dependency on an element of an unknown array, or on a malformed element id.
  for (const char* id : {"j-00000077_1", "j-00000077_01", "j-00000077_10000"}) {
    auto r = h.post("/v1/jobs", {{"command", {"x"}}, {"after_ok", {id}}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << id;
    EXPECT_EQ(Harness::body(r)["error"]["field"], "after_ok") << id;
  }
  EXPECT_EQ(Harness::body(h.get("/v1/jobs"))["jobs"].size(), 0u);

  const json parent = h.submit(array_spec(3, 2));
  const std::string p = parent["id"];
  EXPECT_EQ(parent["array"]["count"], 3);
  EXPECT_EQ(parent["array"]["parallel"], 2);
  EXPECT_EQ(parent["array"]["first"], p + "_0");
  EXPECT_EQ(parent["array"]["last"], p + "_2");
  EXPECT_EQ(parent["array"]["states"]["pending"], 3);
  EXPECT_EQ(parent["array"]["states"]["running"], 0);
  const json e = Harness::body(h.get("/v1/jobs/" + p + "_1"));
  EXPECT_EQ(e["array_id"], p);
  EXPECT_EQ(e["array_index"], 1);
  EXPECT_EQ(e["spec"]["array"], (json{{"count", 3}, {"parallel", 2}}));
  EXPECT_EQ(h.get("/v1/jobs/" + p + "_3")->status, 404);
  const json list = Harness::body(h.get("/v1/jobs?limit=2"));
  ASSERT_EQ(list["jobs"].size(), 2u);
  EXPECT_EQ(list["jobs"][0]["id"], p + "_2");
  EXPECT_EQ(list["next"], p + "_1");
  const json rest = Harness::body(h.get("/v1/jobs?after=" + p + "_1"));
  ASSERT_EQ(rest["jobs"].size(), 1u);
  EXPECT_EQ(rest["jobs"][0]["id"], p + "_0");

  auto r = h.post("/v1/jobs/" + p + "/cancel", json::object());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Harness::body(r)["state"], "cancelled");
  EXPECT_EQ(Harness::body(r)["array"]["states"]["cancelled"], 3);
  EXPECT_EQ(Harness::body(h.get("/v1/jobs/" + p + "_2"))["state"], "cancelled");

  // An index list: elements by their own index, and the spec keeps the list.
  const json sparse = h.submit(indexed_spec("1,3,7-9", 2));
  const std::string q = sparse["id"];
  EXPECT_EQ(sparse["array"]["count"], 5);
  EXPECT_EQ(sparse["array"]["first"], q + "_1");
  EXPECT_EQ(sparse["array"]["last"], q + "_9");
  const json e8 = Harness::body(h.get("/v1/jobs/" + q + "_8"));
  EXPECT_EQ(e8["array_index"], 8);
  EXPECT_EQ(e8["spec"]["array"], (json{{"count", 5}, {"parallel", 2}, {"indices", "1,3,7-9"}}));
  EXPECT_EQ(h.get("/v1/jobs/" + q + "_2")->status, 404);
  const json dep = h.submit({{"command", {"x"}}, {"after_ok", {q + "_8"}}});
  EXPECT_EQ(dep["reason"], "waiting for " + q + "_8");
}

}  // namespace
}  // namespace tessel::scheduler::testing
