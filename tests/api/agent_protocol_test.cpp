#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/agent_protocol.hpp"

using namespace tessel::api;

TEST(AgentProtocol, DesiredStateRoundTrip) {
  Assignment a;
  a.job_id = "j-1";
  a.attempt = 2;
  a.node_rank = 1;
  a.nnodes = 2;
  a.id = assignment_id(a.job_id, a.attempt, a.node_rank);
  a.module_ids = {0, 1};
  a.indices = {4, 0};
  a.master_addr = "10.0.0.1";
  a.master_port = 29500;
  a.spec.command = {"true"};
  a.spec.devices = 2;
  DesiredState d{7, {a}};
  auto back = desired_state_from_json(to_json(d));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->version, 7);
  ASSERT_EQ(back->assignments.size(), 1u);
  EXPECT_EQ(back->assignments[0], a);
  EXPECT_EQ(a.id, "j-1.2.1");
}

TEST(AgentProtocol, TaskReportRoundTripAndErrors) {
  TaskReport r{"j-1.0.0", TaskState::exited, 3, std::nullopt, "", 0};
  auto back = task_report_from_json(to_json(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->exit_code, 3);
  EXPECT_EQ(back->state, TaskState::exited);
  EXPECT_FALSE(task_report_from_json(nlohmann::json{{"assignment_id", "x"}, {"state", "zombie"}}));
  EXPECT_FALSE(task_report_from_json(nlohmann::json::array()));
}
