#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/cli/job_view.hpp"
#include "tessel/cli/node_view.hpp"
#include "tessel/cli/reservation_commands.hpp"

namespace tessel::cli {
namespace {

using nlohmann::json;

// 2026-01-01T12:00:00Z
const int64_t kNow = *api::parse_rfc3339("2026-01-01T12:00:00.000Z");

json job(const std::string& id, const std::string& state, const std::string& submitted) {
  return {{"id", id},
          {"name", "train"},
          {"user", "alice"},
          {"state", state},
          {"spec", {{"command", {"python", "train.py"}}, {"devices", 2}, {"nodes", 2}, {"priority", 5}}},
          {"attempt", 0},
          {"submitted_at", submitted},
          {"allocations", json::array()}};
}

TEST(JobsTable, ColumnsAndLastColumnByState) {
  json jobs = json::array();
  auto pending = job("j-1", "pending", "2026-01-01T11:59:15.000Z");
  pending["reason"] = "Resources";
  jobs.push_back(pending);
  auto running = job("j-2", "running", "2026-01-01T09:00:00.000Z");
  running["allocations"] = {{{"node", "gaudi-a"}, {"rank", 0}, {"module_ids", {0, 1}}, {"indices", {3, 1}}},
                            {{"node", "gaudi-b"}, {"rank", 1}, {"module_ids", {2, 3}}, {"indices", {0, 2}}}};
  jobs.push_back(running);
  auto failed = job("j-3", "failed", "2025-12-28T12:00:00.000Z");
  failed["exit_code"] = 3;
  failed["allocations"] = {{{"node", "gaudi-a"}, {"rank", 0}, {"module_ids", {0}}, {"indices", {3}}}};
  jobs.push_back(failed);
  EXPECT_EQ(render_jobs_table(jobs, kNow),
            "ID    NAME    USER    STATE     PRIO   CARDS   NODES   AGE   REASON/NODELIST\n"
            "j-1   train   alice   pending   5      4       2       45s   (Resources)\n"
            "j-2   train   alice   running   5      4       2       3h    gaudi-a,gaudi-b\n"
            "j-3   train   alice   failed    5      4       2       4d    gaudi-a (exit 3)\n");
}

// A PREEMPTED column (kubectl's RESTARTS) only when some listed job was preempted.
TEST(JobsTable, PreemptionCountWhenAnyJobWasPreempted) {
  json jobs = json::array();
  auto pending = job("j-1", "pending", "2026-01-01T11:59:15.000Z");
  pending["reason"] = "preempted by j-9";
  pending["preemptions"] = 2;
  jobs.push_back(pending);
  jobs.push_back(job("j-2", "pending", "2026-01-01T11:59:15.000Z"));
  EXPECT_EQ(render_jobs_table(jobs, kNow),
            "ID    NAME    USER    STATE     PRIO   CARDS   NODES   AGE   PREEMPTED   REASON/NODELIST\n"
            "j-1   train   alice   pending   5      4       2       45s   2           (preempted by j-9)\n"
            "j-2   train   alice   pending   5      4       2       45s   0\n");
}

TEST(JobsTable, ToleratesMissingFields) {
  json jobs = json::array({json::object(), {{"id", "x"}, {"spec", 7}}});
  std::string out = render_jobs_table(jobs, kNow);
  EXPECT_NE(out.find("x "), std::string::npos);
  EXPECT_EQ(render_jobs_table(json::array(), kNow),
            "ID   NAME   USER   STATE   PRIO   CARDS   NODES   AGE   REASON/NODELIST\n");
}

TEST(JobDetail, ShowsSpecAllocationsAndQuotedCommand) {
  auto j = job("j-2", "running", "2026-01-01T11:00:00.000Z");
  j["spec"]["command"] = {"sh", "-c", "echo 'hi' there"};
  j["spec"]["time_limit_s"] = 5400;
  j["spec"]["env"] = {{"A", "1"}};
  j["allocations"] = {{{"node", "gaudi-a"}, {"rank", 0}, {"module_ids", {4, 5, 6, 7}}, {"indices", {0, 1, 2, 3}}}};
  j["master_addr"] = "10.0.0.1";
  j["master_port"] = 29500;
  std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("ID: j-2\n"), std::string::npos);
  EXPECT_NE(out.find("State: running\n"), std::string::npos);
  EXPECT_NE(out.find("Command: sh -c 'echo '\\''hi'\\'' there'\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Time limit: 1h30m\n"), std::string::npos);
  EXPECT_NE(out.find("Submitted: 2026-01-01T11:00:00.000Z (60m ago)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Master: 10.0.0.1:29500\n"), std::string::npos);
  EXPECT_NE(out.find("  A=1\n"), std::string::npos);
  EXPECT_NE(out.find("  0      gaudi-a   4,5,6,7      0,1,2,3\n"), std::string::npos) << out;
}

TEST(JobDetail, ShowsTheCpusAndMemoryHeldPerNode) {
  auto j = job("j-3", "running", "2026-01-01T11:00:00.000Z");
  j["allocations"] = {{{"node", "gaudi-a"},
                       {"rank", 0},
                       {"module_ids", {0, 1}},
                       {"indices", {7, 6}},
                       {"cpus", 16},
                       {"memory_mib", 65536}}};
  std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("  RANK   NODE      MODULE_IDS   INDICES   CPUS   MEMORY\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  0      gaudi-a   0,1          7,6       16     65536 MiB\n"), std::string::npos) << out;
}

TEST(JobDetail, ShowsDependenciesOnlyWhenThereAreAny) {
  auto j = job("j-00000003", "pending", "2026-01-01T11:00:00.000Z");
  j["reason"] = "waiting for j-00000001";
  j["spec"]["after_ok"] = {"j-00000001", "j-00000002"};
  j["spec"]["after_not_ok"] = {"j-00000002"};
  std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("Reason: waiting for j-00000001\n"), std::string::npos) << out;
  EXPECT_NE(out.find("After ok: j-00000001,j-00000002\n"), std::string::npos) << out;
  EXPECT_NE(out.find("After not ok: j-00000002\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("After any"), std::string::npos) << out;
  EXPECT_EQ(render_job_detail(job("j-1", "pending", "2026-01-01T11:00:00.000Z"), kNow).find("After"),
            std::string::npos);
}

TEST(JobDetail, ShowsAnArraysCountsAndAnElementsArray) {
  auto p = job("j-00000042", "running", "2026-01-01T11:00:00.000Z");
  p["array"] = {
      {"count", 100},
      {"parallel", 8},
      {"states",
       {{"pending", 90}, {"assigned", 0}, {"running", 8}, {"succeeded", 2}, {"failed", 0}, {"cancelled", 0}}}};
  std::string out = render_job_detail(p, kNow);
  EXPECT_NE(out.find("Array: 100 elements, at most 8 at once: 90 pending, 8 running, 2 succeeded\n"), std::string::npos)
      << out;
  auto e = job("j-00000042_7", "pending", "2026-01-01T11:00:00.000Z");
  e["array_id"] = "j-00000042";
  e["array_index"] = 7;
  e["spec"]["array"] = {{"count", 100}, {"parallel", 8}};
  out = render_job_detail(e, kNow);
  EXPECT_NE(out.find("Array: element 7 of j-00000042 (100 elements)\n"), std::string::npos) << out;
  EXPECT_EQ(render_job_detail(job("j-1", "pending", "2026-01-01T11:00:00.000Z"), kNow).find("Array"),
            std::string::npos);
}

TEST(JobDetail, ShowsPreemptionsWithTheLastTimeAndByWhom) {
  auto j = job("j-5", "pending", "2026-01-01T11:00:00.000Z");
  j["preemptions"] = 2;
  j["last_preempted_at"] = "2026-01-01T11:50:00.000Z";
  j["last_preempted_by"] = "j-9";
  std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("Preemptions: 2, last 2026-01-01T11:50:00.000Z (10m ago) by j-9\n"), std::string::npos) << out;
  // From a scheduler that stores no time: the count alone. Never preempted: no line.
  j.erase("last_preempted_at");
  EXPECT_NE(render_job_detail(j, kNow).find("Preemptions: 2\n"), std::string::npos);
  j["preemptions"] = 0;
  EXPECT_EQ(render_job_detail(j, kNow).find("Preemptions"), std::string::npos);
}

TEST(JobTerminal, States) {
  EXPECT_TRUE(job_is_terminal({{"state", "succeeded"}}));
  EXPECT_TRUE(job_is_terminal({{"state", "cancelled"}}));
  EXPECT_FALSE(job_is_terminal({{"state", "assigned"}}));
  EXPECT_FALSE(job_is_terminal({{"state", "bogus"}}));
}

json gaudi_node() {
  json devs = json::array();
  for (int m = 0; m < 8; ++m) {
    json d = {{"index", 7 - m},
              {"module_id", m},
              {"model", "HL-225"},
              {"healthy", m != 6},
              {"utilization_pct", 10},
              {"memory_used_mib", 512},
              {"memory_total_mib", 98304},
              {"temperature_c", 30},
              {"power_w", 100},
              {"job", m < 2 ? json("j-2") : json(nullptr)}};
    if (m == 6) d["health_reason"] = "needs reset";
    devs.push_back(d);
  }
  return {{"name", "gaudi-a"},
          {"address", "10.0.0.1:7451"},
          {"state", "ready"},
          {"last_heartbeat", "2026-01-01T11:59:55.000Z"},
          {"inventory", {{"vendor", "habana"}, {"driver_version", "1.17.0"}, {"devices", devs}}},
          {"free_groups",
           {{"1", {{2}, {3}, {4}, {5}, {7}}}, {"2", {{2, 3}, {4, 5}}}, {"4", json::array()}, {"8", json::array()}}}};
}

TEST(NodesTable, CardMapFreeGroupsAndLegend) {
  json nodes = json::array({gaudi_node()});
  auto down = gaudi_node();
  down["name"] = "gaudi-b";
  down["state"] = "down";
  down.erase("last_heartbeat");
  down["inventory"]["devices"] = json::array();
  down["free_groups"] = json::object();
  nodes.push_back(down);
  EXPECT_EQ(render_nodes_table(nodes, kNow),
            "NAME      STATE   MODEL    FREE   CARDS        FREE-GROUPS          HEARTBEAT\n"
            "gaudi-a   ready   HL-225   5/8    [UU....X.]   2:{2,3}{4,5} 1:{7}   5s ago\n"
            "gaudi-b   down    -        0/0    []           -                    never\n"
            "cards by module id: U in use, . free, X unhealthy, - absent\n");
  EXPECT_EQ(render_nodes_table(json::array(), kNow), "No nodes.\n");
}

TEST(NodesTable, DegradedNodesAreListedWithTheirReasonUnderTheTable) {
  auto n = gaudi_node();
  n["state"] = "degraded";
  n["degraded"] = "agent state dir: No space left on device";
  const std::string out = render_nodes_table(json::array({n}), kNow);
  EXPECT_NE(out.find("gaudi-a   degraded "), std::string::npos) << out;
  EXPECT_NE(out.find("\ngaudi-a degraded: agent state dir: No space left on device\n"), std::string::npos) << out;
  const std::string detail = render_node_detail(n, kNow);
  EXPECT_NE(detail.find("State: degraded\nDegraded: agent state dir: No space left on device\n"), std::string::npos)
      << detail;
  EXPECT_EQ(render_node_detail(gaudi_node(), kNow).find("Degraded"), std::string::npos);
}

TEST(NodesTable, TheDetailShowsIsolationCpusAndMemory) {
  auto n = gaudi_node();
  EXPECT_EQ(render_node_detail(n, kNow).find("Isolation"), std::string::npos);  // An agent before issue 28.
  n["inventory"]["isolation"] = "cgroup1";
  n["inventory"]["cpus"] = 8;
  n["inventory"]["memory_mib"] = 65536;
  n["inventory"]["numa"] = json::parse(R"([{"id":0,"cpus":"0-3"},{"id":1,"cpus":"4-7"}])");
  const std::string detail = render_node_detail(n, kNow);
  EXPECT_NE(detail.find("Isolation: cgroup1\nCPUs: 8 (NUMA 0: 0-3, 1: 4-7)\nMemory: 65536 MiB\n"), std::string::npos)
      << detail;
  n["cpus_used"] = 6;  // What jobs hold, from a scheduler that places CPUs and memory.
  n["memory_used_mib"] = 4096;
  const std::string held = render_node_detail(n, kNow);
  EXPECT_NE(held.find("CPUs: 6 of 8 held (NUMA 0: 0-3, 1: 4-7)\nMemory: 4096 of 65536 MiB held\n"), std::string::npos)
      << held;
}

TEST(NodesTable, TheDetailShowsTheContainerRuntime) {
  auto n = gaudi_node();
  EXPECT_EQ(render_node_detail(n, kNow).find("Images"), std::string::npos);  // Runs no images.
  n["inventory"]["isolation"] = "cgroup1";
  n["inventory"]["containers"] = "podman 4.3.1, runc";
  const std::string detail = render_node_detail(n, kNow);
  EXPECT_NE(detail.find("Isolation: cgroup1\nImages: podman 4.3.1, runc\n"), std::string::npos) << detail;
}

TEST(JobDetail, ShowsTheImageMountsAndShmSize) {
  auto j = job("j-4", "running", "2026-01-01T11:00:00.000Z");
  j["spec"]["image"] = "localhost/tessel-test:1";
  j["spec"]["image_pull"] = "always";
  j["spec"]["mounts"] = {{{"source", "/data/imagenet"}, {"target", "/data"}, {"read_only", true}},
                         {{"source", "/scratch"}, {"target", "/scratch"}}};
  j["spec"]["shm_size_mib"] = 8192;
  const std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("Image: localhost/tessel-test:1 (pulled every time)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Mount: /data/imagenet -> /data (read-only)\nMount: /scratch -> /scratch\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("Shm size: 8192 MiB\n"), std::string::npos) << out;
  EXPECT_EQ(render_job_detail(job("j-5", "running", "2026-01-01T11:00:00.000Z"), kNow).find("Image"),
            std::string::npos);
}

TEST(NodesTable, WideShowsVersionsAndPortsAndPortsDownAreListed) {
  auto n = gaudi_node();
  for (auto& d : n["inventory"]["devices"]) {
    d["firmware_version"] = d["module_id"] == 0 ? "fw-b" : "fw-a";
    const bool down = d["module_id"] == 5;
    d["ports_total"] = 3;
    d["ports_up"] = down ? 2 : 3;
    d["ports_down"] = down ? json::array({1}) : json::array();
  }
  const std::string wide = render_nodes_table(json::array({n}), kNow, true);
  EXPECT_NE(wide.find("FREE-GROUPS          DRIVER   FIRMWARE     PORTS   HEARTBEAT   LABELS\n"), std::string::npos)
      << wide;
  EXPECT_NE(wide.find("1.17.0   fw-a, fw-b   23/24   5s ago      -\n"), std::string::npos) << wide;
  const std::string plain = render_nodes_table(json::array({n}), kNow);
  EXPECT_EQ(plain.find("DRIVER"), std::string::npos) << plain;
  EXPECT_NE(plain.find("\ngaudi-a: ports down on module 5, not used for multi-node jobs\n"), std::string::npos)
      << plain;
  const std::string detail = render_node_detail(n, kNow);
  EXPECT_NE(detail.find("Driver: 1.17.0\nFirmware: fw-a, fw-b\n"
                        "NIC ports up: 23/24 (down on module 5: not used for multi-node jobs)\n"),
            std::string::npos)
      << detail;
  // Nodes of other vendors report no ports: "-" in the wide table, no lines.
  const std::string old = render_nodes_table(json::array({gaudi_node()}), kNow, true);
  EXPECT_NE(old.find("1.17.0   -          -       5s ago      -\n"), std::string::npos) << old;
  EXPECT_EQ(render_node_detail(gaudi_node(), kNow).find("NIC ports"), std::string::npos);
}

TEST(NodeDetail, DevicesTable) {
  std::string out = render_node_detail(gaudi_node(), kNow);
  EXPECT_NE(out.find("Name: gaudi-a\n"), std::string::npos);
  EXPECT_NE(out.find("Cards: [UU....X.]  5/8 free\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Free groups: 2:{2,3}{4,5} 1:{7}\n"), std::string::npos);
  EXPECT_NE(out.find("MODULE   INDEX   MODEL    HEALTH"), std::string::npos) << out;
  EXPECT_NE(out.find("unhealthy (needs reset)"), std::string::npos);
  EXPECT_NE(out.find("98304 MiB"), std::string::npos);
}

TEST(Inventory, TableAndNodeCounts) {
  json inv = {{"models",
               {{{"model", "HL-225"},
                 {"vendor", "habana"},
                 {"cards", 16},
                 {"healthy", 15},
                 {"free", 9},
                 {"free_groups", {{"1", 9}, {"2", 3}, {"4", 1}, {"8", 0}}}}}},
              {"nodes", {{"ready", 2}, {"draining", 0}, {"down", 1}}}};
  EXPECT_EQ(render_inventory(inv),
            "MODEL    VENDOR   CARDS   HEALTHY   FREE   FREE-GROUPS\n"
            "HL-225   habana   16      15        9      1:9 2:3 4:1 8:0\n"
            "nodes: 2 ready, 0 draining, 1 down\n");
  EXPECT_EQ(render_inventory({{"models", json::array()}, {"nodes", {{"ready", 0}, {"draining", 0}, {"down", 0}}}}),
            "No cards.\nnodes: 0 ready, 0 draining, 0 down\n");
  EXPECT_EQ(render_inventory(
                {{"models", json::array()}, {"nodes", {{"ready", 1}, {"degraded", 1}, {"draining", 0}, {"down", 0}}}}),
            "No cards.\nnodes: 1 ready, 1 degraded, 0 draining, 0 down\n");
}

TEST(NodesTable, LabelsInTheWideTableAndTheDetail) {
  auto n = gaudi_node();
  n["labels"] = {{"fabric", "ib"}, {"rack", "r7"}};
  n["admin_labels"] = {{"rack", "r7"}};
  const std::string wide = render_nodes_table(json::array({n}), kNow, true);
  EXPECT_NE(wide.find("5s ago      fabric=ib,rack=r7\n"), std::string::npos) << wide;
  EXPECT_EQ(render_nodes_table(json::array({n}), kNow).find("LABELS"), std::string::npos);
  const std::string detail = render_node_detail(n, kNow);
  EXPECT_NE(detail.find("Labels: fabric=ib,rack=r7* (*: set by an admin)\n"), std::string::npos) << detail;
  EXPECT_EQ(render_node_detail(gaudi_node(), kNow).find("Labels"), std::string::npos);
}

TEST(JobDetail, ShowsNodeConstraints) {
  auto j = job("j-6", "pending", "2026-01-01T11:00:00.000Z");
  j["spec"]["node_selector"] = {{"rack", "r7"}};
  j["spec"]["nodelist"] = {"n1", "n2"};
  j["spec"]["exclude"] = {"n9"};
  const std::string out = render_job_detail(j, kNow);
  EXPECT_NE(out.find("Node selector: rack=r7\nNodelist: n1,n2\nExclude: n9\n"), std::string::npos) << out;
  EXPECT_EQ(render_job_detail(job("j-7", "pending", "2026-01-01T11:00:00.000Z"), kNow).find("Nodelist"),
            std::string::npos);
}

// Reservations (issue 32): a node whose window is open shows ready+reserved, and every
// node's reservations are listed under the table and in tessel node.
TEST(NodesTable, ReservedNodesShowTheirReservations) {
  auto n = gaudi_node();
  n["reservations"] = json::array({{{"name", "demo"},
                                    {"start", "2026-01-01T11:00:00.000Z"},
                                    {"end", "2026-01-01T13:00:00.000Z"},
                                    {"maintenance", false}},
                                   {{"name", "fix"},
                                    {"start", "2026-01-02T00:00:00.000Z"},
                                    {"end", "2026-01-02T06:00:00.000Z"},
                                    {"maintenance", true}}});
  const std::string out = render_nodes_table(json::array({n}), kNow);
  EXPECT_NE(out.find("gaudi-a   ready+reserved "), std::string::npos) << out;
  EXPECT_NE(out.find("\ngaudi-a reserved for demo from 2026-01-01T11:00:00.000Z to 2026-01-01T13:00:00.000Z\n"
                     "gaudi-a reserved for fix from 2026-01-02T00:00:00.000Z to 2026-01-02T06:00:00.000Z "
                     "(maintenance)\n"),
            std::string::npos)
      << out;
  const std::string later = render_nodes_table(json::array({n}), kNow + 2 * 3'600'000);
  EXPECT_NE(later.find("gaudi-a   ready "), std::string::npos) << later;  // Between the windows.
  EXPECT_NE(render_node_detail(n, kNow).find("State: ready+reserved\nReservations:\ngaudi-a reserved for demo"),
            std::string::npos);
}

TEST(ReservationViews, ListAndBody) {
  const json list = json::array({{{"name", "demo"},
                                  {"state", "active"},
                                  {"start", "2026-01-01T11:00:00.000Z"},
                                  {"end", "2026-01-01T13:00:00.000Z"},
                                  {"nodes", {"n1", "n2"}},
                                  {"users", {"alice"}},
                                  {"projects", {"vision"}},
                                  {"maintenance", false}}});
  EXPECT_EQ(
      render_reservations(list),
      "NAME   STATE    START                      END                        NODES   FOR\n"
      "demo   active   2026-01-01T11:00:00.000Z   2026-01-01T13:00:00.000Z   n1,n2   users alice; projects vision\n");
  ReservationOptions o;
  o.name = "fix";
  o.count = 2;
  o.selector = {"rack=r7"};
  o.end = "1800000000";
  o.maintenance = true;
  auto body = reservation_body(o);
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ(*body, json({{"name", "fix"},
                         {"count", 2},
                         {"node_selector", {{"rack", "r7"}}},
                         {"end", 1800000000},
                         {"maintenance", true}}));
  o.end = "tomorrow";
  EXPECT_EQ(reservation_body(o).error().field, "end");
  o.end = "2026-12-05T10:00:00Z";
  o.start = "now-ish";
  EXPECT_EQ(reservation_body(o).error().field, "start");
  o.start.clear();
  o.selector = {"rack"};
  EXPECT_EQ(reservation_body(o).error().field, "selector");
}

}  // namespace
}  // namespace tessel::cli
