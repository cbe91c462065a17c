// CPUs and memory scheduled through the service: nodes report them, jobs ask or get
// the node's share, assignments carry what placement gave, nodes show what is held,
// and a job that waits says what is short.
#include <gtest/gtest.h>

#include "harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

// An 8-card node with 16 CPUs and 64 GiB.
json sized_inventory() {
  json inv = gaudi_inventory();
  inv["cpus"] = 16;
  inv["memory_mib"] = 65536;
  inv["numa"] = json::array({{{"id", 0}, {"cpus", "0-15"}}});
  inv["isolation"] = "cgroup1";
  return inv;
}

void register_sized(Harness& h, const std::string& name) {
  auto r = h.post("/v1/agent/register", {{"node", name},
                                         {"address", "10.0.0.9"},
                                         {"agent_port", 0},
                                         {"inventory", sized_inventory()},
                                         {"tasks", json::array()}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

json spec(int devices, int cpus = 0, int64_t memory_mib = 0) {
  json s = {{"command", {"/bin/true"}}, {"devices", devices}};
  if (cpus > 0) s["cpus"] = cpus;
  if (memory_mib > 0) s["memory_mib"] = memory_mib;
  return s;
}

json job_of(Harness& h, const std::string& id) { return Harness::body(h.get("/v1/jobs/" + id)); }

TEST(ScheduledResources, SharesAndAsksReachTheAssignmentAndTheNodeView) {
  Harness h;
  register_sized(h, "n1");
  const std::string two = h.submit(spec(2))["id"];
  const std::string asked = h.submit(spec(1, 3, 1000))["id"];
  ASSERT_TRUE(h.wait_state(two, "assigned"));
  ASSERT_TRUE(h.wait_state(asked, "assigned"));
  const json a2 = job_of(h, two)["allocations"][0];
  EXPECT_EQ(a2["cpus"], 4);            // 16 CPUs x 2 cards / 8 cards.
  EXPECT_EQ(a2["memory_mib"], 16384);  // 64 GiB x 2 / 8.
  EXPECT_EQ(job_of(h, asked)["allocations"][0]["cpus"], 3);
  json desired = h.desired("n1", 0, 0);
  std::map<std::string, json> by_job;
  for (const json& x : desired["assignments"]) by_job[x["job_id"]] = x;
  ASSERT_EQ(by_job.size(), 2u);
  EXPECT_EQ(by_job[two]["cpus"], 4);
  EXPECT_EQ(by_job[two]["memory_mib"], 16384);
  EXPECT_EQ(by_job[asked]["cpus"], 3);
  EXPECT_EQ(by_job[asked]["memory_mib"], 1000);
  const json node = Harness::body(h.get("/v1/nodes/n1"));
  EXPECT_EQ(node["cpus_used"], 7);
  EXPECT_EQ(node["memory_used_mib"], 16384 + 1000);
}

TEST(ScheduledResources, AJobWaitsForCpusWithTheReasonAndOneThatNeverFitsSaysSo) {
  Harness h;
  register_sized(h, "n1");
  const std::string hog = h.submit(spec(1, 14))["id"];
  ASSERT_TRUE(h.wait_state(hog, "assigned"));
  const std::string late = h.submit(spec(1, 4))["id"];
  const std::string huge = h.submit(spec(1, 64))["id"];
  EXPECT_TRUE(eventually([&] {
    return job_of(h, late)["reason"] == "waiting for CPUs (n1: 14 of 16 CPUs in use, job needs 4)" &&
           job_of(h, huge)["reason"] == "no node can hold 64 CPUs per node (at most 16 CPUs, 65536 MiB)";
  })) << job_of(h, late).dump()
      << job_of(h, huge).dump();
}

TEST(ScheduledResources, JobsWithoutCardsGetTheDefaultOfOneCpu) {
  StateOptions so;
  so.task_defaults.cpus_without_cards = 2;
  so.task_defaults.memory_mib_without_cards = 512;
  Harness h(std::nullopt, so);
  register_sized(h, "n1");
  const std::string id = h.submit(spec(0))["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  const json a = job_of(h, id)["allocations"][0];
  EXPECT_EQ(a["cpus"], 2);
  EXPECT_EQ(a["memory_mib"], 512);
}

TEST(ScheduledResources, HoldsSurviveARestart) {
  const testkit::TempDir dir("tessel-resources");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  const ServiceOptions opts = test_service_options();
  const json reg = {{"node", "n1"}, {"address", "h1"}, {"agent_port", 0}, {"inventory", sized_inventory()}};
  auto job_json = [](httplib::Client& c, const std::string& id) {
    return json::parse(c.Get(("/v1/jobs/" + id).c_str())->body);
  };
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    httplib::Client c("127.0.0.1", svc.port());
    ASSERT_EQ(c.Post("/v1/agent/register", reg.dump(), "application/json")->status, 200);
    auto r = c.Post("/v1/jobs", spec(1, 10).dump(), "application/json");
    ASSERT_EQ(r->status, 201);
    const std::string id = json::parse(r->body)["id"];
    ASSERT_TRUE(eventually([&] { return job_json(c, id)["state"] == "assigned"; }));
  }
  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok());
  Service svc(**store, clock, std::nullopt, opts);
  ASSERT_TRUE(svc.start().ok());
  httplib::Client c("127.0.0.1", svc.port());
  EXPECT_EQ(json::parse(c.Get("/v1/nodes/n1")->body)["cpus_used"], 10);
  auto r = c.Post("/v1/jobs", spec(1, 8).dump(), "application/json");
  ASSERT_EQ(r->status, 201);
  const std::string next = json::parse(r->body)["id"];
  EXPECT_TRUE(eventually([&] {
    return job_json(c, next)["reason"] == "waiting for CPUs (n1: 10 of 16 CPUs in use, job needs 8)";
  })) << job_json(c, next).dump();
}

// Runs the placed job `id` for `seconds` on the fake clock and ends it with a report
// carrying what its task measured.
void run_measured(Harness& h, const std::string& id, int64_t seconds, double cpu_seconds, int64_t max_rss_mib) {
  ClusterState& st = h.service->state();
  const api::Job j = st.job(id).value();
  api::TaskReport t;
  t.assignment_id = api::assignment_id(j.id, j.attempt, 0);
  t.state = api::TaskState::running;
  ASSERT_TRUE(st.report(api::ReportRequest{j.allocations.at(0).node, {t}}, "").ok());
  h.clock.advance_ms(seconds * 1000);
  t.state = api::TaskState::exited;
  t.exit_code = 0;
  t.cpu_seconds = cpu_seconds;
  t.max_rss_mib = max_rss_mib;
  ASSERT_TRUE(st.report(api::ReportRequest{j.allocations.at(0).node, {t}}, "").ok());
  ASSERT_EQ(st.job(id)->state, api::JobState::succeeded);
}

TEST(ScheduledResources, WhatTheTasksMeasuredIsKeptWithTheJob) {
  Harness h;
  register_sized(h, "n1");
  const std::string id = h.submit(spec(1))["id"];
  ASSERT_TRUE(h.wait_state(id, "assigned"));
  run_measured(h, id, 100, 42.5, 3000);
  const json j = job_of(h, id);
  EXPECT_DOUBLE_EQ(j["cpu_seconds"].get<double>(), 42.5);
  EXPECT_EQ(j["max_rss_mib"], 3000);
}

TEST(ScheduledResources, JobsWithoutCardsCountCpuSecondsApartFromCardSeconds) {
  StateOptions so;
  so.task_defaults.cpus_without_cards = 2;
  Harness h(std::nullopt, so);
  register_sized(h, "n1");
  const std::string cpu_only = h.submit(spec(0))["id"];
  const std::string carded = h.submit(spec(1))["id"];
  ASSERT_TRUE(h.wait_state(cpu_only, "assigned"));
  ASSERT_TRUE(h.wait_state(carded, "assigned"));
  run_measured(h, cpu_only, 100, 150.0, 10);
  run_measured(h, carded, 50, 20.0, 10);
  const json rows = Harness::body(h.get("/v1/usage"))["usage"];
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  std::map<std::string, json> by_model;
  for (const json& r : rows) by_model[r["model"]] = r;
  EXPECT_DOUBLE_EQ(by_model["none"]["cpu_seconds"].get<double>(), 2 * 100.0);  // 2 CPUs for 100 s.
  EXPECT_DOUBLE_EQ(by_model["none"]["card_seconds"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(by_model["HL-225"]["card_seconds"].get<double>(), 50.0);
  EXPECT_FALSE(by_model["HL-225"].contains("cpu_seconds"));
}

}  // namespace
}  // namespace tessel::scheduler::testing
