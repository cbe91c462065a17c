// Preemption with the real scheduler and agent (fake hl-smi, 8 HL-225 cards): a
// preemptible job of project batch holds every card; a job of project vision,
// within its guarantee of 8, is submitted. The batch task gets SIGTERM (it traps
// it, writes a marker and keeps running), then SIGKILL after its kill_grace_s;
// the vision job starts on the freed cards; batch goes back to pending with
// "preempted by ...", a preemptions count, and later runs again with
// TESSEL_PREEMPTED=1 in its environment.
#include <gtest/gtest.h>

#include <filesystem>

#include "cluster.hpp"
#include "files.hpp"
#include "tessel/api/job.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr int kGraceS = 2;

int64_t started_ms(const json& job) { return tessel::api::parse_rfc3339(job["started_at"].get<std::string>()).value(); }

TEST(ClusterPreempt, SigtermThenSigkillAfterTheGraceThenRequeuedAndRunAgainWithTesselPreempted) {
  Cluster c;
  c.scheduler_args = {"--preempt-min-runtime", "1"};
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  ASSERT_EQ(c.post("/v1/projects", {{"name", "vision"}, {"quotas", {{"*", {{"guaranteed", 8}}}}}}), 201);
  ASSERT_EQ(c.post("/v1/projects", {{"name", "batch"}}), 201);
  const std::string dir = c.root() + "/out";
  std::filesystem::create_directories(dir);

  // First run: record the environment, then ignore SIGTERM (writing when it came, in
  // ms) until killed. A later run (TESSEL_PREEMPTED=1) records it and succeeds.
  const std::string script =
      "env > " + dir + "/env.$TESSEL_ASSIGNMENT_ID; " + "if [ -n \"$TESSEL_PREEMPTED\" ]; then exit 0; fi; " +
      "trap 'echo $(($(date +%s%N) / 1000000)) > " + dir + "/term' TERM; while :; do sleep 0.1; done";
  json batch = {{"command", {"/bin/sh", "-c", script}},
                {"devices", 8},
                {"project", "batch"},
                {"preemptible", true},
                {"kill_grace_s", kGraceS}};
  const std::string b = c.submit(batch)["id"];
  ASSERT_TRUE(c.wait_job(b, {"running"}));

  json vision = {{"command", {"/bin/sh", "-c", "sleep 1"}}, {"devices", 8}, {"project", "vision"}};
  const std::string a = c.submit(vision)["id"];
  auto requeued = c.wait_reason(b, "preempted by " + a);
  ASSERT_TRUE(requeued);
  EXPECT_EQ((*requeued)["state"], "pending");
  EXPECT_EQ((*requeued)["preemptions"], 1);
  EXPECT_EQ((*requeued)["attempt"], 1);

  // SIGTERM reached the task; it ignored it and SIGKILL followed after the grace,
  // and only then did the vision job start on the cards.
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir + "/term"); }, 10s));
  auto started = c.wait_job(a, {"running", "succeeded"});
  ASSERT_TRUE(started) << c.get("/v1/jobs/" + a).dump();
  const int64_t term_ms = std::stoll(tessel::testkit::read_file(dir + "/term"));
  const int64_t gap = started_ms(*started) - term_ms;
  EXPECT_GE(gap, kGraceS * 1000 - 300) << "started before the grace ran out";
  EXPECT_LE(gap, (kGraceS + 3) * 1000);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(c.task_dir("n1", b) + "/result.json"); }, 10s));
  const json result = json::parse(tessel::testkit::read_file(c.task_dir("n1", b) + "/result.json"));
  EXPECT_EQ(result["signal"], 9) << result.dump();

  // a ends; b runs again and sees TESSEL_PREEMPTED=1 (its first run did not).
  auto done_a = c.wait_job(a, {"succeeded", "failed"});
  ASSERT_TRUE(done_a);
  EXPECT_EQ((*done_a)["state"], "succeeded");
  auto done_b = c.wait_job(b, {"succeeded", "failed"});
  ASSERT_TRUE(done_b) << c.get("/v1/jobs/" + b).dump();
  EXPECT_EQ((*done_b)["state"], "succeeded") << done_b->dump();
  EXPECT_EQ((*done_b)["preemptions"], 1);
  const auto first = parse_env_dump(tessel::testkit::read_file(dir + "/env." + b + ".0.0"));
  const auto second = parse_env_dump(tessel::testkit::read_file(dir + "/env." + b + ".1.0"));
  EXPECT_EQ(first.count("TESSEL_PREEMPTED"), 0u);
  ASSERT_EQ(second.count("TESSEL_PREEMPTED"), 1u);
  EXPECT_EQ(second.at("TESSEL_PREEMPTED"), "1");

  auto r = tessel::testkit::RestClient(c.port()).get("/metrics");
  EXPECT_NE(r.text.find("tessel_preemptions_total 1\n"), std::string::npos);
}

}  // namespace
