#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/api/project.hpp"

#include "spec_checks.hpp"

using nlohmann::json;
using tessel::api::Allocation;
using tessel::api::array_element_id;
using tessel::api::array_indices;
using tessel::api::ArraySpec;
using tessel::api::is_job_id;
using tessel::api::Job;
using tessel::api::job_from_json;
using tessel::api::JobState;
using tessel::api::parse_array_indices;
using tessel::api::parse_job_spec;
using tessel::api::split_element_id;
using tessel::api::testing::error_field;

namespace {

TEST(JobEvents, RoundTripAndTheCapKeepsTheFirstAndTheLatest) {
  tessel::api::Job job;
  job.id = "j-00000001";
  job.spec.command = {"x"};
  for (int i = 0; i < 150; ++i)
    tessel::api::add_job_event(job.events, tessel::api::JobEvent{1000 + i,
                                                                 i ? "requeued" : "submitted",
                                                                 tessel::api::JobState::pending,
                                                                 i,
                                                                 {"n1"},
                                                                 "why " + std::to_string(i),
                                                                 std::nullopt});
  ASSERT_EQ(job.events.size(), tessel::api::kMaxJobEvents);
  EXPECT_EQ(job.events.front().event, "submitted");
  EXPECT_EQ(job.events[1].attempt, 51);
  EXPECT_EQ(job.events.back().attempt, 149);
  job.events.back().exit_code = 3;
  auto back = tessel::api::job_from_json(tessel::api::to_json(job));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->events, job.events);
  auto bad = tessel::api::to_json(job);
  bad["events"][0]["at"] = "yesterday";
  EXPECT_FALSE(tessel::api::job_from_json(bad).ok());
}

}  // namespace

TEST(JobSpec, MinimalDefaults) {
  auto r = parse_job_spec(json{{"command", {"true"}}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->devices, 0);
  EXPECT_EQ(r->nodes, 1);
  EXPECT_FALSE(r->task_per_device);
  EXPECT_EQ(r->priority, 0);
  EXPECT_EQ(r->max_retries, 0);
  EXPECT_FALSE(r->time_limit_s);
}

TEST(JobSpec, FullRoundTrip) {
  json in = {{"name", "train"},
             {"command", {"python3", "-c", "print(1)"}},
             {"env", {{"A", "b"}}},
             {"workdir", "/tmp"},
             {"devices", 4},
             {"nodes", 2},
             {"tasks_per_node", "device"},
             {"priority", 10},
             {"max_retries", 3},
             {"time_limit_s", 600},
             {"kill_grace_s", 5},
             {"vendor", "habana"},
             {"model", "HL-225"}};
  auto r = parse_job_spec(in);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->task_per_device);
  auto again = parse_job_spec(to_json(*r));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *r);
}

TEST(JobSpec, ErrorsNameTheField) {
  EXPECT_EQ(error_field(json::array()), "");
  EXPECT_EQ(error_field(json::object()), "command");
  EXPECT_EQ(error_field(json{{"command", json::array()}}), "command");
  EXPECT_EQ(error_field(json{{"command", "true"}}), "command");
  EXPECT_EQ(error_field(json{{"command", {1, 2}}}), "command");
  EXPECT_EQ(error_field(json{{"command", {""}}}), "command");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", 3}, {"vendor", "habana"}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", "4"}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", 33}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", -1}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"nodes", 0}}), "nodes");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"priority", 1001}}), "priority");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"max_retries", 11}}), "max_retries");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"time_limit_s", 0}}), "time_limit_s");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"kill_grace_s", -1}}), "kill_grace_s");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"vendor", "rocm"}}), "vendor");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"project", "a b"}}), "project");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"project", 7}}), "project");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"preemptible", "yes"}}), "preemptible");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"env", {{"ROCR_VISIBLE_DEVICES", "0"}}}}),
            "env.ROCR_VISIBLE_DEVICES");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"env", {{"HIP_VISIBLE_DEVICES", "0"}}}}), "env.HIP_VISIBLE_DEVICES");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"env", {{"ASCEND_RT_VISIBLE_DEVICES", "0"}}}}),
            "env.ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"tasks_per_node", 2}}), "tasks_per_node");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"tasks_per_node", "device"}}), "tasks_per_node");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"workdir", "relative"}}), "workdir");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"bogus", 1}}), "bogus");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"name", std::string(1000, 'a')}}), "name");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", 1e30}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"priority", 18446744073709551615ULL}}), "priority");
}

TEST(JobSpec, ReservedEnvironmentIsRefused) {
  for (const char* name :
       {"HABANA_VISIBLE_MODULES", "HABANA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "RANK", "WORLD_SIZE", "LOCAL_RANK",
        "MASTER_ADDR", "MASTER_PORT", "TESSEL_PORT", "HLS_MODULE_ID", "ZE_AFFINITY_MASK", "ZE_FLAT_DEVICE_HIERARCHY",
        "NEURON_RT_VISIBLE_CORES", "MUSA_VISIBLE_DEVICES", "MLU_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS",
        "TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_PROCESS_BOUNDS"}) {
    auto r = parse_job_spec(json{{"command", {"x"}}, {"env", {{name, "1"}}}});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().field, std::string("env.") + name);
  }
  EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"env", {{"PT_ENABLE_INT64_SUPPORT", "0"}}}}));
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"env", {{"A=B", "1"}}}}), "env");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"env", {{"A", 1}}}}), "env.A");
}

// Without a vendor any count a node could hold (0 to 32) is taken; the pass says when
// none can. With one, the vendor's group sizes decide, and the message names them.
TEST(JobSpec, DeviceCountsFollowTheVendorsGroups) {
  auto message = [](const json& j) {
    auto r = parse_job_spec(j);
    return !r.ok() ? r.error().message : std::string();
  };
  for (int n : {0, 1, 3, 6, 12, 16, 32}) EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"devices", n}})) << n;
  auto r = parse_job_spec(json{{"command", {"x"}}, {"devices", 16}, {"vendor", "neuron"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->devices, 16);
  EXPECT_EQ(message(json{{"command", {"x"}}, {"devices", 6}, {"vendor", "habana"}}),
            "devices: must be 0, 1, 2, 4 or 8 with vendor habana");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", 16}, {"vendor", "ascend"}}), "devices");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"devices", 32}, {"vendor", "neuron"}}), "devices");
  // Neuron: Trainium's blocks (1, 4, 8, 16) or an Inferentia ring (any count up to 16).
  EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"devices", 12}, {"vendor", "neuron"}}));
  EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"devices", 12}, {"vendor", "neuron"}, {"model", "inf2"}}));
  EXPECT_EQ(message(json{{"command", {"x"}}, {"devices", 12}, {"vendor", "neuron"}, {"model", "trn1"}}),
            "devices: must be 0, 1, 4, 8 or 16 with vendor neuron and model trn1");
  // Any subset: NVIDIA, AMD, Intel take any count.
  EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"devices", 3}, {"vendor", "nvidia"}}));
  EXPECT_TRUE(parse_job_spec(json{{"command", {"x"}}, {"devices", 16}, {"vendor", "intel"}}));
}

TEST(JobSpec, DependenciesRoundTripAndAreLeftOutWhenEmpty) {
  json in = {{"command", {"x"}},
             {"after_ok", {"j-00000001", "j-00000002"}},
             {"after_any", {"j-00000003"}},
             {"after_not_ok", {"j-123456789"}}};
  auto r = parse_job_spec(in);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->after_ok, (std::vector<std::string>{"j-00000001", "j-00000002"}));
  EXPECT_TRUE(r->has_dependencies());
  auto again = parse_job_spec(to_json(*r));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *r);

  auto plain = parse_job_spec(json{{"command", {"x"}}, {"after_any", json::array()}});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_dependencies());
  EXPECT_FALSE(to_json(*plain).contains("after_any"));
}

TEST(JobSpec, ArraysRoundTripAndParallelDefaultsToTheCount) {
  auto r = parse_job_spec(json{{"command", {"x"}}, {"array", {{"count", 100}, {"parallel", 8}}}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->array, (ArraySpec{100, 8}));
  auto again = parse_job_spec(to_json(*r));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *r);
  auto unlimited = parse_job_spec(json{{"command", {"x"}}, {"array", {{"count", 10000}}}});
  ASSERT_TRUE(unlimited);
  EXPECT_EQ(unlimited->array, (ArraySpec{10000, 10000}));
  EXPECT_FALSE(parse_job_spec(json{{"command", {"x"}}})->array);
  EXPECT_FALSE(to_json(*parse_job_spec(json{{"command", {"x"}}})).contains("array"));
}

TEST(JobSpec, BadArraysNameTheField) {
  auto with = [](const json& a) { return json{{"command", {"x"}}, {"array", a}}; };
  EXPECT_EQ(error_field(with(json{{"count", 0}})), "array.count");
  EXPECT_EQ(error_field(with(json{{"count", 10001}})), "array.count");
  EXPECT_EQ(error_field(with(json{{"count", -1}})), "array.count");
  EXPECT_EQ(error_field(with(json{{"count", "4"}})), "array.count");
  EXPECT_EQ(error_field(with(json{{"parallel", 2}})), "array.count");  // Required.
  EXPECT_EQ(error_field(with(json{{"count", 4}, {"parallel", 0}})), "array.parallel");
  EXPECT_EQ(error_field(with(json{{"count", 4}, {"parallel", -3}})), "array.parallel");
  EXPECT_EQ(error_field(with(json{{"count", 4}, {"parallel", 1.5}})), "array.parallel");
  EXPECT_EQ(error_field(with(json{{"count", 4}, {"tasks", 2}})), "array.tasks");
  EXPECT_EQ(error_field(with(4)), "array");
  auto r = parse_job_spec(with(json{{"count", 10001}}));
  EXPECT_EQ(r.error().message, "array.count: must be between 1 and 10000");
}

TEST(JobSpec, ArrayElementIds) {
  EXPECT_EQ(array_element_id("j-00000042", 7), "j-00000042_7");
  auto e = split_element_id("j-00000042_7");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->parent, "j-00000042");
  EXPECT_EQ(e->index, 7);
  EXPECT_EQ(split_element_id("j-00000042_9999")->index, 9999);
  for (const char* bad : {"j-00000042", "j-00000042_", "j-00000042_07", "j-00000042_10000", "j-00000042_x", "j-42_1",
                          "j-00000042_1_2", "x-00000042_1"})
    EXPECT_FALSE(split_element_id(bad)) << bad;
  EXPECT_FALSE(is_job_id("j-00000042_7"));  // An element's id is not a plain job id...
  auto dep = parse_job_spec(json{{"command", {"x"}}, {"after_ok", {"j-00000042_7", "j-00000042"}}});
  ASSERT_TRUE(dep) << dep.error().message;  // ...but a dependency may name one.
  EXPECT_EQ(dep->after_ok, (std::vector<std::string>{"j-00000042_7", "j-00000042"}));
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"after_ok", {"j-00000042_07"}}}), "after_ok");
}

TEST(JobSpec, ArrayIndicesInSlurmSyntax) {
  using V = std::vector<int>;
  EXPECT_EQ(*parse_array_indices("5-9"), (V{5, 6, 7, 8, 9}));
  EXPECT_EQ(*parse_array_indices("1,3,7-9"), (V{1, 3, 7, 8, 9}));
  EXPECT_EQ(*parse_array_indices("0-30:10"), (V{0, 10, 20, 30}));
  EXPECT_EQ(*parse_array_indices("0-31:10"), (V{0, 10, 20, 30}));
  EXPECT_EQ(*parse_array_indices("9,2-4,3"), (V{2, 3, 4, 9}));  // Any order; overlaps once.
  EXPECT_EQ(*parse_array_indices("9999"), (V{9999}));
  EXPECT_EQ(parse_array_indices("0-9999")->size(), 10000u);
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "-1", "1-", "a", "1-b", "3-1", "1-9:0", "1-9:", "5:2", "10000",
                          "0-10000", "1 - 3", "01-3x", "1-2-3", "123456"})
    EXPECT_FALSE(parse_array_indices(bad).ok()) << bad;
  EXPECT_EQ(parse_array_indices("3-1").error().message, "'3-1' ends before it starts");
  EXPECT_EQ(parse_array_indices("0-10000").error().message, "indices go up to 9999");
  EXPECT_FALSE(parse_array_indices(std::string(1025, '1')).ok());
  EXPECT_EQ(array_indices(ArraySpec{3, 3}), (V{0, 1, 2}));
  EXPECT_EQ(array_indices(ArraySpec{2, 1, "7,5"}), (V{5, 7}));
}

TEST(JobSpec, ArraysWithIndicesRoundTripAndNameTheirFields) {
  auto r = parse_job_spec(json{{"command", {"x"}}, {"array", {{"indices", "1,3,7-9"}, {"parallel", 2}}}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->array, (ArraySpec{5, 2, "1,3,7-9"}));
  EXPECT_EQ(to_json(*r)["array"], (json{{"count", 5}, {"parallel", 2}, {"indices", "1,3,7-9"}}));
  auto again = parse_job_spec(to_json(*r));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *r);
  EXPECT_EQ(parse_job_spec(json{{"command", {"x"}}, {"array", {{"indices", "4-5"}}}})->array, (ArraySpec{2, 2, "4-5"}));
  auto with = [](const json& a) { return json{{"command", {"x"}}, {"array", a}}; };
  EXPECT_EQ(error_field(with(json{{"indices", "5-1"}})), "array.indices");
  EXPECT_EQ(error_field(with(json{{"indices", 5}})), "array.indices");
  EXPECT_EQ(error_field(with(json{{"indices", ""}})), "array.indices");
  EXPECT_EQ(error_field(with(json{{"indices", "1-3"}, {"count", 2}})), "array.count");
  EXPECT_EQ(error_field(with(json{{"indices", "1-3"}, {"parallel", 0}})), "array.parallel");
}

TEST(JobJson, PreemptionFieldsRoundTrip) {
  Job j;
  j.id = "j-00000005";
  j.spec = *parse_job_spec(json{{"command", {"x"}}});
  j.preemptions = 2;
  j.last_preempted_at_ms = 1'796'028'752'123;
  j.last_preempted_by = "j-00000009";
  j.preempt_claim = {Allocation{"n1", 0, {0, 1}, {0, 1}}};
  j.preempt_victims = {"j-00000003", "j-00000004_2"};
  json shown = to_json(j);
  EXPECT_EQ(shown["last_preempted_at"], tessel::api::format_rfc3339(j.last_preempted_at_ms));
  EXPECT_EQ(shown["last_preempted_by"], "j-00000009");
  EXPECT_EQ(shown["preempting"]["victims"], json({"j-00000003", "j-00000004_2"}));
  auto back = job_from_json(shown);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->last_preempted_at_ms, j.last_preempted_at_ms);
  EXPECT_EQ(back->last_preempted_by, j.last_preempted_by);
  EXPECT_EQ(back->preempt_claim, j.preempt_claim);
  EXPECT_EQ(back->preempt_victims, j.preempt_victims);
  // A claim is shown (and stored) only while the job is pending; never preempted: no fields.
  j.state = JobState::assigned;
  EXPECT_FALSE(to_json(j).contains("preempting"));
  EXPECT_FALSE(to_json(Job{}).contains("last_preempted_at"));
}

TEST(JobSpec, BadDependenciesNameTheField) {
  for (const char* key : {"after_ok", "after_any", "after_not_ok"}) {
    auto with = [&](const json& v) { return json{{"command", {"x"}}, {key, v}}; };
    EXPECT_EQ(error_field(with("j-00000001")), key);                // Not a list.
    EXPECT_EQ(error_field(with(json{{"id", "j-00000001"}})), key);  // Not a list.
    EXPECT_EQ(error_field(with({1})), key);                         // Not strings.
    EXPECT_EQ(error_field(with({"j-00000001", nullptr})), key);     // Not strings.
    EXPECT_EQ(error_field(with({"00000001"})), key);                // Malformed ids...
    EXPECT_EQ(error_field(with({"j-1"})), key);                     // (8 to 18 digits)
    EXPECT_EQ(error_field(with({"j-0000000x"})), key);
    EXPECT_EQ(error_field(with({"J-00000001"})), key);
    EXPECT_EQ(error_field(with({"j-00000001 "})), key);
    EXPECT_EQ(error_field(with({std::string("j-0000000") + '\0'})), key);
    EXPECT_EQ(error_field(with({"j-1234567890123456789"})), key);
    EXPECT_EQ(error_field(with({"j-00000001", "j-00000001"})), key);  // Twice.
    json many = json::array();
    for (int i = 1; i <= 101; ++i) many.push_back("j-" + std::to_string(10'000'000 + i));
    EXPECT_EQ(error_field(with(many)), key);  // Over 100.
    many.erase(many.end() - 1);
    EXPECT_TRUE(parse_job_spec(with(many))) << key;  // 100 is fine.
  }
  auto r = parse_job_spec(json{{"command", {"x"}}, {"after_ok", {"j-1"}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "after_ok: 'j-1' is not a job id like j-00000042 or j-00000042_7");
}

TEST(Rfc3339, RoundTrip) {
  int64_t ms = 1796028752123;  // 2026-11-30T...
  auto s = tessel::api::format_rfc3339(ms);
  EXPECT_EQ(s.back(), 'Z');
  EXPECT_EQ(tessel::api::parse_rfc3339(s), ms);
  EXPECT_FALSE(tessel::api::parse_rfc3339("yesterday"));
}

TEST(Rfc3339, KnownInstants) {
  using tessel::api::format_rfc3339;
  using tessel::api::parse_rfc3339;
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(1796028752123), "2026-11-30T08:52:32.123Z");
  EXPECT_EQ(format_rfc3339(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(parse_rfc3339("1969-12-31T23:59:59.999Z"), -1);
  EXPECT_EQ(parse_rfc3339("2024-02-29T00:00:00Z"), 1709164800000);
  EXPECT_EQ(parse_rfc3339("2026-11-30T09:52:32.123+01:00"), 1796028752123);
  EXPECT_EQ(parse_rfc3339("2026-11-30t08:52:32.1234567z"), 1796028752123);
  EXPECT_EQ(parse_rfc3339("0001-01-01T00:00:00.000Z"), -62135596800000);
  // Out of range values are clamped to what RFC 3339 can write, and read back.
  EXPECT_EQ(format_rfc3339(INT64_MIN), "0001-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(INT64_MAX), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(parse_rfc3339(format_rfc3339(INT64_MAX)), 253402300799999);
}

TEST(Rfc3339, RejectsWhatIsNotAnRfc3339Time) {
  for (const char* bad :
       {"", "-026-11-30T08:52:32.123Z",  // found by fuzz_agent_protocol in CI
        "+2026-11-30T08:52:32Z", "2026-11-30", "2026-11-30T08:52Z", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T08:60:00Z", "2026-11-30T08:52:60Z",
        "2026-11-30T08:52:32.Z", "2026-11-30T08:52:32", "2026-11-30T08:52:32.123Zjunk", "2026-11-30T08:52:32+1:00",
        "2026-11-30 08:52:32Z", " 2026-11-30T08:52:32Z", "0000-01-01T00:00:00Z", "2026-1-30T08:52:32Z"})
    EXPECT_FALSE(tessel::api::parse_rfc3339(bad)) << bad;
}

TEST(JobJson, BadTimestampIsAnErrorNamingTheField) {
  tessel::api::Job job;
  job.id = "j-1";
  job.spec.command = {"true"};
  job.submitted_at_ms = 1796028752123;
  auto j = tessel::api::to_json(job);
  ASSERT_TRUE(tessel::api::job_from_json(j).ok());
  j["submitted_at"] = "-026-11-30T08:52:32.123Z";
  auto r = tessel::api::job_from_json(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("job.submitted_at"), std::string::npos) << r.error().message;
}

TEST(JobSpec, CommandAndEnvTotalsAreBounded) {
  using tessel::api::kMaxCommandBytes;
  using tessel::api::kMaxEnvBytes;
  // Each argument under the per-argument cap, the total just over its own.
  const std::string arg(60'000, 'a');
  json command = json::array();
  for (size_t total = 0; total <= kMaxCommandBytes; total += arg.size() + 1) command.push_back(arg);
  EXPECT_EQ(error_field(json{{"command", command}}), "command");
  command.erase(command.end() - 1);
  EXPECT_TRUE(parse_job_spec(json{{"command", command}}));

  json env = json::object();
  for (size_t i = 0, total = 0; total <= kMaxEnvBytes; ++i) {
    const std::string name = "V" + std::to_string(i);
    total += name.size() + arg.size() + 2;
    env[name] = arg;
  }
  auto r = parse_job_spec(json{{"command", {"x"}}, {"env", env}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "env");
  EXPECT_NE(r.error().message.find("bytes in all"), std::string::npos) << r.error().message;
}

TEST(Project, ParsesDefaultsAndRoundTrips) {
  auto p = tessel::api::parse_project(json{{"name", "vision"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->shares, 1);
  EXPECT_TRUE(p->quotas.empty());
  json full = {{"name", "nlp"},
               {"shares", 3},
               {"quotas", {{"HL-225", {{"guaranteed", 4}, {"max", 8}}}, {"*", {{"guaranteed", 0}, {"max", nullptr}}}}}};
  auto f = tessel::api::parse_project(full);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(tessel::api::to_json(*f), full);
  EXPECT_EQ(f->quotas.at("HL-225").max, 8);
  EXPECT_FALSE(f->quotas.at("*").max.has_value());
  auto bad = tessel::api::parse_project(json{{"name", "v"}, {"quotas", {{"X", {{"guaranteed", 5}, {"max", 4}}}}}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, tessel::ErrorCode::invalid_argument);
  EXPECT_EQ(bad.error().field, "quotas.X.guaranteed");
  EXPECT_EQ(bad.error().message, "quotas.X.guaranteed: must not exceed max");
}

// A project's own limit of jobs not yet ended per user: round trips, absent when unset,
// and anything but an integer 1..100,000,000 (or null) names the field.
TEST(Project, MaxActiveJobsPerUser) {
  auto p = tessel::api::parse_project(json{{"name", "vision"}, {"max_active_jobs_per_user", 500}});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->max_active_jobs_per_user, 500);
  EXPECT_EQ(tessel::api::to_json(*p)["max_active_jobs_per_user"], 500);
  auto none = tessel::api::parse_project(json{{"name", "vision"}, {"max_active_jobs_per_user", nullptr}});
  ASSERT_TRUE(none);
  EXPECT_FALSE(tessel::api::to_json(*none).contains("max_active_jobs_per_user"));
  for (const json& bad : {json(0), json(-3), json(1.5), json("10"), json(int64_t{100'000'001})}) {
    auto r = tessel::api::parse_project(json{{"name", "v"}, {"max_active_jobs_per_user", bad}});
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_EQ(r.error().field, "max_active_jobs_per_user") << bad.dump();
  }
}

TEST(JobSpec, DriverVersionConstraint) {
  auto r = parse_job_spec(json{{"command", {"true"}}, {"driver_version", "1.17.0"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->driver_version, "1.17.0");
  EXPECT_EQ(tessel::api::to_json(*r)["driver_version"], "1.17.0");
  EXPECT_FALSE(tessel::api::to_json(*parse_job_spec(json{{"command", {"true"}}})).contains("driver_version"));
  EXPECT_EQ(error_field(json{{"command", {"true"}}, {"driver_version", "1.17 0"}}), "driver_version");
  EXPECT_EQ(error_field(json{{"command", {"true"}}, {"driver_version", 1.17}}), "driver_version");
}

namespace {

// Issue 31: the warning signal, Slurm's --signal NAME@BEFORE.
TEST(JobSpec, AWarningSignalRoundTripsAndItsFieldsAreChecked) {
  auto r = parse_job_spec(
      json{{"command", {"x"}}, {"time_limit_s", 600}, {"signal", {{"name", "USR1"}, {"before_s", 120}}}});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->signal);
  EXPECT_EQ(r->signal->name, "USR1");
  EXPECT_EQ(r->signal->before_s, 120);
  EXPECT_EQ(tessel::api::to_json(*r)["signal"], (json{{"name", "USR1"}, {"before_s", 120}}));
  EXPECT_EQ(*parse_job_spec(tessel::api::to_json(*r)), *r);
  // Without before_s: Slurm's 60 s; without a time limit: only at preemption.
  r = parse_job_spec(json{{"command", {"x"}}, {"signal", {{"name", "TERM"}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signal->before_s, 60);
  EXPECT_FALSE(parse_job_spec(json{{"command", {"x"}}})->signal);

  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", {{"name", "KILL"}}}}), "signal.name");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", {{"name", "SIGUSR1"}}}}), "signal.name");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", {{"before_s", 5}}}}), "signal.name");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", "USR1"}}), "signal");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", {{"name", "USR1"}, {"before_s", 0}}}}), "signal.before_s");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"signal", {{"name", "USR1"}, {"whenever", 1}}}}), "signal.whenever");
  EXPECT_EQ(error_field(json{{"command", {"x"}}, {"time_limit_s", 6}, {"signal", {{"name", "USR1"}, {"before_s", 7}}}}),
            "signal.before_s");
  auto bad = parse_job_spec(json{{"command", {"x"}}, {"signal", {{"name", "KILL"}}}});
  EXPECT_EQ(bad.error().message, "signal.name: must be one of USR1, USR2, TERM, INT, HUP, URG, CONT");
}

TEST(JobJson, HeldBySignalsAndEventsByRoundTrip) {
  Job job;
  job.id = "j-00000001";
  job.user = "alice";
  job.spec.command = {"x"};
  job.held_by = "alice";
  job.signals = {{1, "USR1"}, {2, "TERM"}};
  job.events.push_back({1000, "held", JobState::pending, 0, {}, "held by alice", std::nullopt, "alice"});
  auto back = job_from_json(tessel::api::to_json(job));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->held_by, "alice");
  EXPECT_EQ(back->signals, job.signals);
  EXPECT_EQ(back->events, job.events);
  json j = tessel::api::to_json(job);
  j["signals"] = json::array({{{"id", 2}, {"name", "USR1"}}, {{"id", 1}, {"name", "USR1"}}});
  EXPECT_FALSE(job_from_json(j).ok());  // Ids must rise.
}

}  // namespace
