// hl-smi hangs, fails, crashes or prints garbage on one node while its agent
// runs (the fake tool's mode file is switched). The node's cards must turn
// unhealthy with a reason in GET /v1/nodes, the scheduler must stop placing
// there, a job already running there must finish normally, and once hl-smi
// recovers the cards must be offered again.
#include <fstream>

#include <gtest/gtest.h>

#include "chaos_cluster.hpp"

namespace tessel::chaos {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp");
  out << text << "\n";
  out.close();
  std::filesystem::rename(path + ".tmp", path);
}

json gated_job(const TempDir& dir, const std::string& tag, int devices) {
  return shell_job("while [ ! -e " + dir.str("go-" + tag) + " ]; do sleep 0.05; done", devices);
}

// Every device of the node has healthy == want (and a reason when unhealthy).
bool node_health_is(const Api& api, const std::string& node, bool want) {
  auto n = api.node(node);
  if (!n) return false;
  const auto& devs = (*n)["inventory"].value("devices", json::array());
  if (devs.empty()) return false;
  for (const auto& d : devs) {
    if (d.value("healthy", !want) != want) return false;
    if (!want && d.value("health_reason", "").empty()) return false;
  }
  return true;
}

std::string alloc_node(const Api& api, const std::string& id) {
  auto j = api.job(id);
  if (!j || (*j)["allocations"].empty()) return "";
  return (*j)["allocations"][0].value("node", "");
}

class ChaosSmi : public ::testing::TestWithParam<const char*> {};

TEST_P(ChaosSmi, FaultyHlSmiMarksCardsUnhealthyStopsPlacementSparesRunningJobAndRecovers) {
  const std::string mode = GetParam();
  TempDir dir("smi-" + mode);
  Child sched = start_scheduler(dir, "1", dir.str("tessel.db"), "127.0.0.1:0", {"--heartbeat-timeout", "30"});
  const int port = sched.wait_listening();
  ASSERT_GT(port, 0) << sched.stderr_text();
  Api api(port);
  const std::string url = "http://127.0.0.1:" + std::to_string(port), mode_file = dir.str("hl-smi-mode");
  write_file(mode_file, "normal");
  AgentSpec sick = agent_spec("smi-a", url);
  sick.mode_file = mode_file;
  Child a = start_agent(dir, sick);
  ASSERT_TRUE(wait_nodes(api, {"smi-a"}, "ready")) << a.stderr_text();

  // A job running on smi-a before its hl-smi goes bad.
  auto x = api.post("/v1/jobs", gated_job(dir, "x", 1));
  ASSERT_EQ(x.status, 201);
  const std::string x_id = x.body["id"];
  ASSERT_TRUE(eventually([&] { return api.job_state(x_id) == "running"; }, 20s)) << a.stderr_text();
  Child b = start_agent(dir, agent_spec("smi-b", url));
  ASSERT_TRUE(wait_nodes(api, {"smi-b"}, "ready")) << b.stderr_text();

  write_file(mode_file, mode);
  // "hang" costs the agent's inventory timeout (10 s) per read.
  ASSERT_TRUE(eventually([&] { return node_health_is(api, "smi-a", false); }, 40s))
      << "hl-smi " << mode << ": cards still healthy\n"
      << api.node("smi-a")->dump() << "\n"
      << a.stderr_text();

  // Two 4-card jobs fit only on smi-b now; a third one waits with a reason.
  std::vector<std::string> quads;
  for (const char* tag : {"q1", "q2", "q3"}) {
    auto r = api.post("/v1/jobs", gated_job(dir, tag, 4));
    ASSERT_EQ(r.status, 201);
    quads.push_back(r.body["id"]);
  }
  ASSERT_TRUE(
      eventually([&] { return api.job_state(quads[0]) == "running" && api.job_state(quads[1]) == "running"; }, 20s));
  EXPECT_EQ(alloc_node(api, quads[0]), "smi-b");
  EXPECT_EQ(alloc_node(api, quads[1]), "smi-b");
  ASSERT_TRUE(eventually([&] { return !api.job(quads[2])->value("reason", "").empty(); }, 20s));
  EXPECT_EQ(api.job_state(quads[2]), "pending") << api.job(quads[2])->dump();

  // The job on the sick node is not harmed.
  EXPECT_EQ(api.job_state(x_id), "running");
  std::ofstream(dir.str("go-x")).put('\n');
  ASSERT_TRUE(eventually([&] { return api.job_state(x_id) == "succeeded"; }, 40s)) << a.stderr_text();
  EXPECT_EQ(api.job(x_id)->value("exit_code", -1), 0);

  // hl-smi recovers: the cards are offered again and the waiting job lands there.
  write_file(mode_file, "normal");
  ASSERT_TRUE(eventually([&] { return node_health_is(api, "smi-a", true); }, 40s)) << a.stderr_text();
  ASSERT_TRUE(eventually([&] { return api.job_state(quads[2]) == "running"; }, 20s)) << api.job(quads[2])->dump();
  EXPECT_EQ(alloc_node(api, quads[2]), "smi-a");
  for (const char* tag : {"q1", "q2", "q3"}) std::ofstream(dir.str(std::string("go-") + tag)).put('\n');
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& id : quads)
          if (api.job_state(id) != "succeeded") return false;
        return true;
      },
      20s));
}

INSTANTIATE_TEST_SUITE_P(Modes, ChaosSmi, ::testing::Values("fail", "garbage", "crash", "hang"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace tessel::chaos
