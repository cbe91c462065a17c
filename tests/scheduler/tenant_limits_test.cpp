// Tenant limits: jobs not yet ended per user, per user in a project, in all, and array
// elements per submission. Past one, a submission is refused whole (429, or 403 for
// an array too large to ever take), nothing stored; ended and cancelled jobs free
// their count; the counts survive a restart and a failed write takes nothing.
#include "harness.hpp"
#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/tenant_limits.hpp"

namespace tessel::scheduler::testing {
namespace {

using nlohmann::json;

json one_card() { return {{"command", {"true"}}, {"devices", 1}}; }
json array_of(int n) { return {{"command", {"true"}}, {"devices", 1}, {"array", {{"count", n}}}}; }

StateOptions limited(int64_t per_user, int64_t total = 0, int array = api::kMaxArrayCount) {
  StateOptions so;
  so.limits.max_active_jobs_per_user = per_user;
  so.limits.max_active_jobs = total;
  so.limits.max_array_size = array;
  return so;
}

TEST(ActiveJobCounts, CountsByUserProjectAndInAll) {
  ActiveJobCounts c;
  c.add("alice", "default", 3);
  c.add("alice", "ml", 2);
  c.add("bob", "ml", 1);
  EXPECT_EQ(c.of_user("alice"), 5);
  EXPECT_EQ(c.of_user_in("ml", "alice"), 2);
  EXPECT_EQ(c.of_project("ml"), 3);
  EXPECT_EQ(c.total(), 6);
  c.add("alice", "ml", -2);
  EXPECT_EQ(c.of_user_in("ml", "alice"), 0);
  EXPECT_EQ(c.by_user().count("alice"), 1U);
  c.add("alice", "default", -3);
  EXPECT_EQ(c.by_user().count("alice"), 0U);  // Users with none are not kept.
  EXPECT_EQ(c.total(), 1);
}

TEST(ActiveJobCounts, AdmitNamesTheLimitAndTheCount) {
  ActiveJobCounts c;
  c.add("alice", "ml", 4);
  TenantLimits lim;
  lim.max_active_jobs_per_user = 5;
  lim.max_active_jobs = 0;
  EXPECT_TRUE(admit_jobs(c, lim, std::nullopt, "alice", "ml", 1).ok());
  auto refused = admit_jobs(c, lim, std::nullopt, "alice", "ml", 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::resource_exhausted);
  EXPECT_EQ(refused.error().message,
            "user alice has 4 jobs not yet ended and may have at most 5 (--max-active-jobs-per-user); this "
            "submission adds 2: wait for some to end, or cancel some");
  auto project = admit_jobs(c, lim, int64_t{4}, "alice", "ml", 1);
  ASSERT_FALSE(project.ok());
  EXPECT_NE(project.error().message.find("user alice in project ml has 4"), std::string::npos);
  EXPECT_NE(project.error().message.find("the project's max_active_jobs_per_user"), std::string::npos);
  lim.max_active_jobs = 4;
  EXPECT_NE(admit_jobs(c, lim, std::nullopt, "bob", "ml", 1).error().message.find("the scheduler has 4"),
            std::string::npos);
  EXPECT_TRUE(admit_array_size(lim, api::kMaxArrayCount).ok());
  lim.max_array_size = 100;
  auto big = admit_array_size(lim, 101);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::permission_denied);
  EXPECT_EQ(big.error().field, "array.count");
}

TEST(TenantLimits, AUserAtTheLimitIsRefusedOthersAreNotAndEndedJobsFreeTheirCount) {
  StateHarness h(":memory:", limited(3));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(h.submit(one_card()));
  auto fourth = h.try_submit(one_card());
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().code, ErrorCode::resource_exhausted);
  EXPECT_NE(fourth.error().message.find("user alice has 3 jobs not yet ended"), std::string::npos);
  // An array is refused whole when its elements do not all fit, with or without dependencies.
  ASSERT_TRUE(h.try_submit(array_of(2), "bob").ok());  // bob: 2 of 3.
  EXPECT_EQ(h.try_submit(array_of(2), "bob").error().code, ErrorCode::resource_exhausted);
  json after = one_card();
  after["after_ok"] = {ids[0]};
  EXPECT_EQ(h.try_submit(after).error().code, ErrorCode::resource_exhausted);
  EXPECT_EQ(h.state->list_jobs({}).jobs.size(), 5U);  // Nothing of the refused ones was stored.

  // A job that ends (here: cancelled; below: run to the end) frees its count.
  ASSERT_TRUE(h.state->cancel(ids[0], Principal{"alice", Role::user, "", {}}).ok());
  ids.push_back(h.submit(one_card()));
  h.add_node("n1");
  h.state->schedule_pass();
  h.run_to_end(ids[1], 0);
  after["after_ok"] = {ids[2]};
  ids.push_back(h.submit(after));  // Waiting for a dependency: counted as well.
  EXPECT_EQ(h.try_submit(one_card()).error().code, ErrorCode::resource_exhausted);
  EXPECT_EQ(h.state->stats().active_jobs, 5);  // alice 3, bob 2.
}

TEST(TenantLimits, ProjectLimitAndAllUsersLimit) {
  StateHarness h(":memory:", limited(0, 5));
  api::Project ml;
  ml.name = "ml";
  ml.max_active_jobs_per_user = 2;
  ASSERT_TRUE(h.state->create_project(ml).ok());
  json in_ml = one_card();
  in_ml["project"] = "ml";
  h.submit(in_ml);
  h.submit(in_ml);
  auto third = h.try_submit(in_ml);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("in project ml"), std::string::npos) << third.error().message;
  h.submit(one_card());    // The default project has no limit of its own.
  h.submit(in_ml, "bob");  // Per user.
  h.submit(in_ml, "bob");
  auto sixth = h.try_submit(one_card(), "carol");
  ASSERT_FALSE(sixth.ok());
  EXPECT_NE(sixth.error().message.find("the scheduler has 5"), std::string::npos) << sixth.error().message;
  EXPECT_EQ(h.state->active_jobs_in("ml"), 4);
}

TEST(TenantLimits, ArraysCountTheirElementsAndAreCappedPerSubmission) {
  StateHarness h(":memory:", limited(10, 0, 8));
  const std::string parent = h.submit(array_of(8));
  EXPECT_EQ(h.state->stats().active_jobs, 8);  // Elements, not the parent.
  auto big = h.try_submit(array_of(9), "bob");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::permission_denied);
  EXPECT_EQ(big.error().field, "array.count");
  EXPECT_EQ(h.try_submit(array_of(3)).error().code, ErrorCode::resource_exhausted);
  ASSERT_TRUE(h.state->cancel(parent, Principal{"alice", Role::user, "", {}}).ok());
  EXPECT_EQ(h.state->stats().active_jobs, 0);
  h.submit(array_of(8));
}

TEST(TenantLimits, AFailedWriteTakesNothingAndARestartCountsAgain) {
  testkit::TempDir dir("tessel-limits");
  const std::string db = (dir.path() / "s.db").string();
  {
    StateHarness h(db, limited(3));
    h.submit(one_card());
    h.store->fail_writes = true;
    EXPECT_EQ(h.try_submit(one_card()).error().code, ErrorCode::unavailable);
    EXPECT_EQ(h.try_submit(array_of(2)).error().code, ErrorCode::unavailable);
    h.store->fail_writes = false;
    h.submit(array_of(2));  // Fits: the failed ones took nothing.
  }
  StateHarness again(db, limited(3));
  EXPECT_EQ(again.state->stats().active_jobs, 3);
  EXPECT_EQ(again.try_submit(one_card()).error().code, ErrorCode::resource_exhausted);
}

// Over HTTP: 429 with the code and message, nothing stored; the counts and limits in
// /metrics and in the project's view.
TEST(TenantLimits, RestAnswers429AndShowsLimits) {
  Harness h(std::nullopt, limited(2, 100));
  h.submit(one_card());
  h.submit(one_card());
  auto r = h.post("/v1/jobs", one_card());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(Harness::body(r)["error"]["code"], "resource_exhausted");
  EXPECT_NE(Harness::body(r)["error"]["message"].get<std::string>().find("may have at most 2"), std::string::npos);
  EXPECT_EQ(Harness::body(h.get("/v1/jobs"))["jobs"].size(), 2U);
  const std::string metrics = h.get("/metrics")->body;
  EXPECT_NE(metrics.find("tessel_jobs_active 2\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tessel_user_jobs_active_max 2\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("anonymous"), std::string::npos) << metrics;  // No user names without a token.
  EXPECT_NE(metrics.find("tessel_job_submissions_refused_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tessel_limit_max_active_jobs_per_user 2\n"), std::string::npos) << metrics;
  const json project = Harness::body(h.get("/v1/projects/default"));
  EXPECT_EQ(project["active_jobs"], 2);
  EXPECT_EQ(project["limits"]["max_active_jobs_per_user"], 2);
  EXPECT_EQ(project["limits"]["max_active_jobs"], 100);
  // A project's own limit shows when lower; bad values are a 400 naming the field.
  auto bad = h.post("/v1/projects", {{"name", "ml"}, {"max_active_jobs_per_user", -1}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Harness::body(bad)["error"]["field"], "max_active_jobs_per_user");
  ASSERT_EQ(h.post("/v1/projects", {{"name", "ml"}, {"max_active_jobs_per_user", 1}})->status, 201);
  const json ml = Harness::body(h.get("/v1/projects/ml"));
  EXPECT_EQ(ml["max_active_jobs_per_user"], 1);
  EXPECT_EQ(ml["limits"]["max_active_jobs_per_user"], 1);
}

}  // namespace
}  // namespace tessel::scheduler::testing
