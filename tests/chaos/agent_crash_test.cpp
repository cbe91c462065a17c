// kill -9 an agent while its tasks run. The tasks (under their own supervisors)
// survive; one of them exits while the agent is down, the other after it comes
// back. Both exit codes must reach the scheduler, and nothing may run twice.
#include <fstream>

#include <gtest/gtest.h>

#include "chaos_cluster.hpp"

namespace tessel::chaos {
namespace {

// A job that records its run, waits for the file `go` (polling), touches `done`
// and exits with `code`.
json gated_job(const TempDir& dir, const std::string& tag, int code) {
  std::string go = dir.str("go-" + tag), done = dir.str("done-" + tag), runs = dir.str("runs.txt");
  return shell_job("echo \"$TESSEL_ASSIGNMENT_ID\" >> " + runs + "; while [ ! -e " + go +
                       " ]; do sleep 0.05; done; touch " + done + "; exit " + std::to_string(code),
                   1);
}

TEST(ChaosAgent, Kill9WhileTasksRunExitCodesReachSchedulerEvenIfProducedWhileDown) {
  TempDir dir("agent-kill");
  Child sched = start_scheduler(dir, "1", dir.str("tessel.db"), "127.0.0.1:0", {"--heartbeat-timeout", "30"});
  const int port = sched.wait_listening();
  ASSERT_GT(port, 0) << sched.stderr_text();
  Api api(port);
  const AgentSpec spec = agent_spec("chaos-a", "http://127.0.0.1:" + std::to_string(port));
  Child agent = start_agent(dir, spec);
  ASSERT_TRUE(wait_nodes(api, {"chaos-a"}, "ready")) << agent.stderr_text();

  auto early = api.post("/v1/jobs", gated_job(dir, "early", 7));  // Exits while the agent is down.
  auto late = api.post("/v1/jobs", gated_job(dir, "late", 0));    // Exits after it is back.
  ASSERT_EQ(early.status, 201);
  ASSERT_EQ(late.status, 201);
  const std::string early_id = early.body["id"], late_id = late.body["id"];
  ASSERT_TRUE(
      eventually([&] { return api.job_state(early_id) == "running" && api.job_state(late_id) == "running"; }, 20s))
      << agent.stderr_text();

  agent.kill9();
  std::ofstream(dir.str("go-early")).put('\n');
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(dir.str("done-early")); }, 20s))
      << "the task did not survive its agent";
  // The scheduler has not heard of it yet: the node is still up, the job running.
  EXPECT_EQ(api.job_state(early_id), "running");

  agent = start_agent(dir, spec);
  ASSERT_TRUE(eventually([&] { return api.job_state(early_id) == "failed"; }, 20s)) << agent.stderr_text();
  EXPECT_EQ(api.job(early_id)->value("exit_code", -1), 7) << api.job(early_id)->dump();
  EXPECT_EQ(api.job_state(late_id), "running");

  std::ofstream(dir.str("go-late")).put('\n');
  ASSERT_TRUE(eventually([&] { return api.job_state(late_id) == "succeeded"; }, 20s)) << agent.stderr_text();
  EXPECT_EQ(api.job(late_id)->value("exit_code", -1), 0);

  auto runs = read_lines(dir.str("runs.txt"));
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, (std::vector<std::string>{early_id + ".0.0", late_id + ".0.0"}));
  // Both cards are free again.
  ASSERT_TRUE(eventually(
      [&] {
        auto n = api.node("chaos-a");
        if (!n) return false;
        for (const auto& d : (*n)["inventory"]["devices"])
          if (!d.value("job", json()).is_null()) return false;
        return true;
      },
      20s));
}

}  // namespace
}  // namespace tessel::chaos
