// Issue 28's wire fields: a task's CPUs and memory (JobSpec, Assignment), the node's
// CPUs, memory, NUMA layout and isolation (NodeInventory), a task's use (TaskReport).
// All are absent on the wire when unset, so older agents and schedulers still parse.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/job.hpp"

using namespace tessel::api;
using nlohmann::json;

namespace {

NodeInventory node() {
  NodeInventory inv;
  inv.vendor = Vendor::habana;
  inv.driver_version = "1.17.0";
  Device d;
  d.model = "HL-225";
  d.bus_id = "0000:33:00.0";
  d.numa_node = 1;
  inv.devices.push_back(d);
  inv.cpus = 8;
  inv.memory_mib = 65536;
  inv.numa = {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}};
  inv.isolation = "cgroup1";
  return inv;
}

std::string inventory_error_field(const json& j) {
  auto r = inventory_from_json(j);
  return r ? "" : r.error().field;
}

}  // namespace

TEST(CpuList, ParsesAndFormatsTheKernelsFormat) {
  EXPECT_EQ(*parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(*parse_cpu_list("5,1-2,2"), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({7}), "7");
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "65536", "1 2", "0-99999999999"})
    EXPECT_FALSE(parse_cpu_list(bad)) << bad;
}

TEST(IsolationFields, InventoryShapeRoundTripsAndIsAbsentWhenUnset) {
  const NodeInventory inv = node();
  const json j = to_json(inv);
  EXPECT_EQ(j["cpus"], 8);
  EXPECT_EQ(j["memory_mib"], 65536);
  EXPECT_EQ(j["numa"], json::parse(R"([{"id":0,"cpus":"0-3"},{"id":1,"cpus":"4-7"}])"));
  EXPECT_EQ(j["isolation"], "cgroup1");
  EXPECT_EQ(j["devices"][0]["numa_node"], 1);
  auto back = inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, inv);

  NodeInventory old = inv;  // An agent that predates issue 28.
  old.cpus = 0;
  old.memory_mib = 0;
  old.numa.clear();
  old.isolation.clear();
  old.devices[0].numa_node.reset();
  const json o = to_json(old);
  for (const char* k : {"cpus", "memory_mib", "numa", "isolation"}) EXPECT_FALSE(o.contains(k)) << k;
  EXPECT_FALSE(o["devices"][0].contains("numa_node"));
  EXPECT_EQ(*inventory_from_json(o), old);
}

TEST(IsolationFields, BadInventoryShapeNamesTheField) {
  json j = to_json(node());
  auto with = [&](const char* key, json v) {
    json x = j;
    x[key] = std::move(v);
    return x;
  };
  EXPECT_EQ(inventory_error_field(with("cpus", -1)), "inventory.cpus");
  EXPECT_EQ(inventory_error_field(with("cpus", 1.5)), "inventory.cpus");
  EXPECT_EQ(inventory_error_field(with("memory_mib", -5)), "inventory.memory_mib");
  EXPECT_EQ(inventory_error_field(with("isolation", "docker")), "inventory.isolation");
  EXPECT_EQ(inventory_error_field(with("numa", "0-3")), "inventory.numa");
  EXPECT_EQ(inventory_error_field(with("numa", json::parse(R"([{"id":0,"cpus":"x"}])"))), "inventory.numa[0].cpus");
  EXPECT_EQ(inventory_error_field(with("numa", json::parse(R"([{"id":1,"cpus":"0"},{"id":0,"cpus":"1"}])"))),
            "inventory.numa[1].id");
  EXPECT_EQ(inventory_error_field(with("numa", json::parse(R"([{"id":0,"cpus":"0-1"},{"id":1,"cpus":"1"}])"))),
            "inventory.numa[1].cpus");
  EXPECT_EQ(inventory_error_field(with("numa", json::parse(R"([{"id":0}])"))), "inventory.numa[0].cpus");
  json d = j;
  d["devices"][0]["numa_node"] = -1;
  EXPECT_EQ(inventory_error_field(d), "inventory.devices[0].numa_node");
}

TEST(IsolationFields, TheNodesShapeIsNotAReading) {
  const NodeInventory a = node();
  NodeInventory b = a;
  b.devices[0].power_w = 300;  // A reading.
  EXPECT_TRUE(same_but_readings(a, b));
  for (auto change : std::vector<void (*)(NodeInventory&)>{
           [](NodeInventory& x) { x.cpus = 4; },
           [](NodeInventory& x) { x.memory_mib = 1; },
           [](NodeInventory& x) { x.numa.pop_back(); },
           [](NodeInventory& x) { x.isolation = "none"; },
           [](NodeInventory& x) { x.devices[0].numa_node = 0; },
       }) {
    NodeInventory c = a;
    change(c);
    EXPECT_FALSE(same_but_readings(a, c));
  }
}

TEST(IsolationFields, AssignmentCpusAndMemoryRoundTripAndAreAbsentWhenUnset) {
  Assignment a;
  a.id = "j-1.0.0";
  a.job_id = "j-1";
  a.spec.command = {"true"};
  EXPECT_FALSE(to_json(a).contains("cpus"));
  EXPECT_FALSE(to_json(a).contains("memory_mib"));
  a.cpus = 4;
  a.memory_mib = 4096;
  auto back = assignment_from_json(to_json(a));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, a);
  for (const char* key : {"cpus", "memory_mib"}) {
    json bad = to_json(a);
    bad[key] = -1;
    auto r = assignment_from_json(bad);
    ASSERT_FALSE(r) << key;
    EXPECT_EQ(r.error().field, key);
  }
}

TEST(IsolationFields, TaskReportUsageRoundTripsAndIsAbsentWhenUnknown) {
  TaskReport r{"j-1.0.0", TaskState::exited, 137, 9, "out of memory: rank 0 killed at its 4096 MiB limit", 0};
  EXPECT_FALSE(to_json(r).contains("cpu_seconds"));
  EXPECT_FALSE(to_json(r).contains("max_rss_mib"));
  r.cpu_seconds = 12.25;
  r.max_rss_mib = 4096;
  auto back = task_report_from_json(to_json(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cpu_seconds, 12.25);
  EXPECT_EQ(back->max_rss_mib, 4096);
  json bad = to_json(r);
  bad["cpu_seconds"] = -1;
  EXPECT_FALSE(task_report_from_json(bad));
  bad["cpu_seconds"] = "12";
  EXPECT_FALSE(task_report_from_json(bad));
  bad = to_json(r);
  bad["max_rss_mib"] = -1;
  EXPECT_FALSE(task_report_from_json(bad));
}

// Local ranks whose output passed the node's log cap: absent when none, checked.
TEST(TaskReportFields, LogsCappedRoundTripsAndIsChecked) {
  TaskReport r{"j-1.0.0", TaskState::exited, 0, std::nullopt, "", 0};
  EXPECT_FALSE(to_json(r).contains("logs_capped"));
  r.logs_capped = {0, 3};
  auto back = task_report_from_json(to_json(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->logs_capped, (std::vector<int>{0, 3}));
  for (const json& bad : {json(1), json({-1}), json({4096}), json({"0"}), json({1.5})}) {
    json j = to_json(r);
    j["logs_capped"] = bad;
    auto refused = task_report_from_json(j);
    ASSERT_FALSE(refused) << bad.dump();
    EXPECT_EQ(refused.error().field, "logs_capped");
  }
}

TEST(IsolationFields, JobSpecCpusAndMemoryAreCheckedAndRoundTrip) {
  auto parsed = parse_job_spec(json{{"command", {"x"}}, {"cpus", 4}, {"memory_mib", 4096}});
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->cpus, 4);
  EXPECT_EQ(parsed->memory_mib, 4096);
  EXPECT_EQ(to_json(*parsed)["cpus"], 4);
  EXPECT_EQ(to_json(*parsed)["memory_mib"], 4096);
  auto none = parse_job_spec(json{{"command", {"x"}}});
  ASSERT_TRUE(none);
  EXPECT_FALSE(to_json(*none).contains("cpus"));
  EXPECT_FALSE(to_json(*none).contains("memory_mib"));
  for (const auto& [key, bad] : std::vector<std::pair<std::string, json>>{{"cpus", -1},
                                                                          {"cpus", 2.5},
                                                                          {"cpus", "4"},
                                                                          {"cpus", kMaxTaskCpus + 1},
                                                                          {"memory_mib", -1},
                                                                          {"memory_mib", 1.5},
                                                                          {"memory_mib", kMaxTaskMemoryMib + 1}}) {
    auto r = parse_job_spec(json{{"command", {"x"}}, {key, bad}});
    ASSERT_FALSE(r) << key << "=" << bad.dump();
    EXPECT_EQ(r.error().field, key);
  }
}
