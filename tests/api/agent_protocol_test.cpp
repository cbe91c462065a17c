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

TEST(AgentProtocol, AssignmentPreemptionsAreOptionalAndRoundTrip) {
  Assignment a;
  a.id = "j-1.1.0";
  a.job_id = "j-1";
  a.attempt = 1;
  a.spec.command = {"true"};
  EXPECT_FALSE(to_json(a).contains("preemptions"));  // Absent when 0: agents before it ignore it anyway.
  a.preemptions = 2;
  EXPECT_EQ(to_json(a)["preemptions"], 2);
  auto back = assignment_from_json(to_json(a));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->preemptions, 2);
}

TEST(AgentProtocol, PollAfterIsOptionalAndBounded) {
  EXPECT_FALSE(to_json(DesiredState{3, {}}).contains("poll_after_ms"));
  auto back = desired_state_from_json(to_json(DesiredState{3, {}, 2000}));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->poll_after_ms, 2000);
  EXPECT_EQ(
      desired_state_from_json(nlohmann::json{{"version", 1}, {"assignments", nlohmann::json::array()}})->poll_after_ms,
      0);
  for (auto bad :
       {nlohmann::json(-1), nlohmann::json(kMaxPollAfterMs + 1), nlohmann::json(1.5), nlohmann::json("2000")}) {
    auto r =
        desired_state_from_json({{"version", 1}, {"assignments", nlohmann::json::array()}, {"poll_after_ms", bad}});
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_NE(r.error().message.find("poll_after_ms"), std::string::npos) << r.error().message;
  }
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

// A running task's phase (pulling its image) rides on its report; absent when none,
// and a bad one is refused naming the field.
TEST(AgentProtocol, TaskReportPhaseIsAbsentWhenEmptyAndChecked) {
  TaskReport r;
  r.assignment_id = "j-1.0.0";
  EXPECT_FALSE(to_json(r).contains("phase"));
  r.phase = kTaskPhasePullingImage;
  auto back = task_report_from_json(to_json(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->phase, "pulling_image");
  EXPECT_EQ(to_json(*back), to_json(r));
  for (const nlohmann::json& bad : {nlohmann::json(""), nlohmann::json("Pulling"), nlohmann::json(3),
                                    nlohmann::json(std::string(kMaxTaskPhaseBytes + 1, 'a'))}) {
    auto j = to_json(r);
    j["phase"] = bad;
    auto res = task_report_from_json(j);
    ASSERT_FALSE(res) << bad.dump();
    EXPECT_EQ(res.error().field, "phase");
  }
}

TEST(AgentProtocol, DegradedIsAbsentWhenEmptyAndRoundTrips) {
  HeartbeatRequest hb;
  hb.node = "n1";
  EXPECT_FALSE(to_json(hb).contains("degraded"));
  EXPECT_EQ(heartbeat_request_from_json(to_json(hb))->degraded, "");
  hb.degraded = "agent state dir: No space left on device";
  auto back = heartbeat_request_from_json(to_json(hb));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->degraded, hb.degraded);
  RegisterRequest reg;
  reg.node = "n1";
  reg.address = "a";
  reg.degraded = "agent state dir: Read-only file system";
  auto reg_back = register_request_from_json(to_json(reg));
  ASSERT_TRUE(reg_back) << reg_back.error().message;
  EXPECT_EQ(reg_back->degraded, reg.degraded);
  auto j = to_json(hb);
  j["degraded"] = std::string(kMaxDegradedBytes + 1, 'x');
  EXPECT_FALSE(heartbeat_request_from_json(j));
  j["degraded"] = 1;
  EXPECT_FALSE(heartbeat_request_from_json(j));
}

// What the agent refused for an old epoch rides on registrations and heartbeats;
// absent on the wire while nothing was refused.
TEST(AgentProtocol, EpochRefusalsRoundTripAndAreAbsentWhileNone) {
  HeartbeatRequest hb;
  hb.node = "n1";
  EXPECT_FALSE(to_json(hb).contains("epoch_refusals"));
  EXPECT_EQ(heartbeat_request_from_json(to_json(hb))->epoch_refusals, EpochRefusals{});
  hb.epoch_refusals = {3, 1, 2};
  auto back = heartbeat_request_from_json(to_json(hb));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->epoch_refusals, hb.epoch_refusals);
  RegisterRequest reg;
  reg.node = "n1";
  reg.address = "a";
  reg.epoch_refusals = {1, 4, 5};
  auto reg_back = register_request_from_json(to_json(reg));
  ASSERT_TRUE(reg_back) << reg_back.error().message;
  EXPECT_EQ(reg_back->epoch_refusals, reg.epoch_refusals);
  for (const auto& bad : {nlohmann::json{{"total", -1}}, nlohmann::json{{"total", 1}, {"last_epoch", -2}},
                          nlohmann::json{{"total", "1"}}, nlohmann::json(7)}) {
    auto j = to_json(hb);
    j["epoch_refusals"] = bad;
    auto r = heartbeat_request_from_json(j);
    EXPECT_FALSE(r) << bad.dump();
  }
}

// Every answer carries the scheduler's leader epoch; 0 (no replicas) is absent on the
// wire and an absent one reads as 0, so agents and schedulers of either age agree.
TEST(AgentProtocol, AnswersCarryTheEpoch) {
  DesiredState d{3, {}};
  d.epoch = 7;
  EXPECT_EQ(desired_state_from_json(to_json(d))->epoch, 7);
  RegisterResponse reg{5, "", 8};
  EXPECT_EQ(register_response_from_json(to_json(reg))->epoch, 8);
  HeartbeatResponse hb{{"j-1.0.0"}, 9};
  auto hb_back = heartbeat_response_from_json(to_json(hb));
  ASSERT_TRUE(hb_back) << hb_back.error().message;
  EXPECT_EQ(hb_back->epoch, 9);
  EXPECT_EQ(hb_back->acknowledged, hb.acknowledged);
  ReportResponse rep{{}, 10};
  EXPECT_EQ(report_response_from_json(to_json(rep))->epoch, 10);

  EXPECT_FALSE(to_json(DesiredState{3, {}}).contains("epoch"));
  EXPECT_FALSE(to_json(RegisterResponse{}).contains("epoch"));
  EXPECT_FALSE(to_json(HeartbeatResponse{}).contains("epoch"));
  EXPECT_FALSE(to_json(ReportResponse{}).contains("epoch"));
  EXPECT_EQ(report_response_from_json(nlohmann::json::object())->epoch, 0);
  for (auto bad : {nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json("2")}) {
    auto r = desired_state_from_json({{"version", 1}, {"assignments", nlohmann::json::array()}, {"epoch", bad}});
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_NE(r.error().message.find("epoch"), std::string::npos) << r.error().message;
    EXPECT_FALSE(heartbeat_response_from_json({{"epoch", bad}})) << bad.dump();
  }
}

// A heartbeat carries the whole inventory, or the cards' readings with the tag of the
// inventory the scheduler holds; never both, never neither.
TEST(AgentProtocol, AHeartbeatCarriesTheInventoryOrReadingsWithTheirTag) {
  HeartbeatRequest hb;
  hb.node = "n1";
  hb.readings = HeartbeatReadings{41, {{0, 100, 7, 35, 90}, {1, std::nullopt, 0, 36, std::nullopt}}};
  auto j = to_json(hb);
  EXPECT_FALSE(j.contains("inventory"));
  EXPECT_EQ(j["inventory_tag"], 41);
  auto back = heartbeat_request_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->readings, hb.readings);

  auto field_of = [](const nlohmann::json& bad) {
    auto r = heartbeat_request_from_json(bad);
    return r ? std::string("(accepted)") : r.error().field;
  };
  auto no_tag = j;
  no_tag.erase("inventory_tag");
  EXPECT_EQ(field_of(no_tag), "inventory_tag");
  for (const auto& tag : {nlohmann::json(0), nlohmann::json(-3), nlohmann::json("41"), nlohmann::json(1.5)}) {
    auto bad = j;
    bad["inventory_tag"] = tag;
    EXPECT_EQ(field_of(bad), "inventory_tag") << tag.dump();
  }
  auto both = j;
  both["inventory"] = to_json(NodeInventory{});
  EXPECT_EQ(field_of(both), "readings");
  EXPECT_EQ(field_of({{"node", "n1"}}), "inventory");
  auto tag_without_readings = to_json(HeartbeatRequest{"n1", {}});
  tag_without_readings["inventory_tag"] = 41;
  EXPECT_EQ(field_of(tag_without_readings), "inventory_tag");
  auto bad_reading = j;
  bad_reading["readings"][1]["power_w"] = "high";
  EXPECT_EQ(field_of(bad_reading), "readings[1].power_w");
  bad_reading = j;
  bad_reading["readings"][0]["fan_rpm"] = 3000;
  EXPECT_EQ(field_of(bad_reading), "readings[0].fan_rpm");
  bad_reading = j;
  bad_reading["readings"] = nlohmann::json::array();
  for (int i = 0; i < 65; ++i) bad_reading["readings"].push_back({{"index", i}});
  EXPECT_EQ(field_of(bad_reading), "readings");

  // Answers name the tag of the inventory the scheduler took; 0 is absent.
  HeartbeatResponse resp;
  resp.inventory_tag = 77;
  EXPECT_EQ(heartbeat_response_from_json(to_json(resp))->inventory_tag, 77);
  EXPECT_FALSE(to_json(HeartbeatResponse{}).contains("inventory_tag"));
  RegisterResponse reg;
  reg.inventory_tag = 78;
  EXPECT_EQ(register_response_from_json(to_json(reg))->inventory_tag, 78);
  EXPECT_EQ(register_response_from_json({{"heartbeat_interval_s", 5}})->inventory_tag, 0);
  EXPECT_FALSE(heartbeat_response_from_json({{"inventory_tag", -1}}));
}

TEST(AgentProtocol, ReadingsApplyOnlyToTheSameCardsInTheirOrder) {
  NodeInventory inv;
  inv.devices.resize(2);
  inv.devices[0].index = 0;
  inv.devices[1].index = 1;
  inv.devices[1].serial = "AN01";
  const NodeInventory before = inv;
  // Wrong count, wrong order: an error naming the field, and the inventory untouched.
  auto short_list = apply_readings(inv, {{0, 1, 2, 3, 4}});
  ASSERT_FALSE(short_list);
  EXPECT_EQ(short_list.error().field, "readings");
  auto swapped = apply_readings(inv, {{1, 1, 2, 3, 4}, {0, 5, 6, 7, 8}});
  ASSERT_FALSE(swapped);
  EXPECT_EQ(swapped.error().field, "readings[0].index");
  EXPECT_EQ(inv, before);

  ASSERT_TRUE(apply_readings(inv, {{0, 1, 2, 3, 4}, {1, 5, std::nullopt, 7, 8}}));
  EXPECT_EQ(inv.devices[1].memory_used_mib, 5);
  EXPECT_EQ(inv.devices[1].utilization_pct, std::nullopt);
  EXPECT_EQ(inv.devices[1].serial, "AN01");
  EXPECT_EQ(readings_of(inv), (std::vector<DeviceReading>{{0, 1, 2, 3, 4}, {1, 5, std::nullopt, 7, 8}}));

  // Readings only: the same shape. Anything else of a card, or another card: not.
  EXPECT_TRUE(same_but_readings(before, inv));
  NodeInventory sick = inv;
  sick.devices[0].healthy = false;
  EXPECT_FALSE(same_but_readings(inv, sick));
  NodeInventory reason = inv;
  reason.devices[1].health_reason = "x";
  EXPECT_FALSE(same_but_readings(inv, reason));
  NodeInventory fewer = inv;
  fewer.devices.pop_back();
  EXPECT_FALSE(same_but_readings(inv, fewer));
  NodeInventory driver = inv;
  driver.driver_version = "1.19.0";
  EXPECT_FALSE(same_but_readings(inv, driver));
}
