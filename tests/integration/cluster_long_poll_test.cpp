// The agent's connections to the scheduler, with the real binaries: the long-poll
// limit (with --max-long-polls 1 the scheduler holds one long poll, so of two agents one
// is told to poll again later; both nodes still get and run their jobs, and the
// scheduler keeps answering), and heartbeats on one kept connection.
#include <gtest/gtest.h>

#include <httplib.h>

#include <set>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

long long metric(const std::string& text, const std::string& name) {
  auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size() + 2));
}

TEST(ClusterLongPollLimit, AgentsPastTheLimitPollLaterAndStillRunJobs) {
  Cluster c;
  c.scheduler_args = {"--max-long-polls", "1"};
  c.start_scheduler();
  c.start_agent("n1");
  c.start_agent("n2");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  httplib::Client http("127.0.0.1", c.port());
  std::string text;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = http.Get("/metrics");
        text = r ? r->body : "";
        return metric(text, "tessel_agent_long_polls") == 1 && metric(text, "tessel_agent_long_polls_shed_total") > 0;
      },
      20s))
      << text;
  EXPECT_EQ(metric(text, "tessel_agent_long_polls_max"), 1) << text;

  // One 8-card job per node: the node whose poll is shed hears of its job on its next poll.
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(c.submit({{"command", {"true"}}, {"devices", 8}})["id"]);
  std::set<std::string> nodes;
  for (const auto& id : ids) {
    auto j = c.wait_job(id, {"succeeded", "failed", "cancelled"}, 30s);
    ASSERT_TRUE(j) << c.get("/v1/jobs/" + id).dump() << "\n"
                   << c.agent("n1").stderr_text() << c.agent("n2").stderr_text();
    EXPECT_EQ((*j)["state"], "succeeded") << j->dump();
    nodes.insert((*j)["allocations"][0]["node"].get<std::string>());
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"}));
}

// Heartbeats every 0.1 s for at least 1 s: ten or more of them on the connection the
// agent keeps, not a new one each (a TCP handshake and a socket in TIME_WAIT each time).
TEST(ClusterHeartbeats, TheAgentSendsThemOnOneKeptConnection) {
  Cluster c;
  c.agent_args = {"--heartbeat-interval", "0.1"};
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  httplib::Client http("127.0.0.1", c.port());  // Keeps its own one connection.
  http.set_keep_alive(true);
  auto accepted = [&] {
    auto r = http.Get("/metrics");
    return r ? metric(r->body, "tessel_http_connections_total") : -1;
  };
  auto last_heartbeat = [&] {
    auto r = http.Get("/v1/nodes/n1");
    if (!r || r->status != 200) return std::string();
    auto j = json::parse(r->body, nullptr, false);
    return j.is_object() ? j.value("last_heartbeat", std::string()) : std::string();
  };
  ASSERT_FALSE(last_heartbeat().empty());
  // The agent's heartbeat connection opens with its first heartbeat after registering.
  std::string seen = last_heartbeat();
  ASSERT_TRUE(eventually([&] { return last_heartbeat() != seen; }, 20s));
  const long long before = accepted();
  ASSERT_GT(before, 0);
  std::set<std::string> beats;
  ASSERT_TRUE(eventually(
      [&] {
        beats.insert(last_heartbeat());
        return beats.size() >= 10;
      },
      30s));
  const long long after = accepted();
  // At most one more: a kept connection the scheduler might close (it never does here)
  // is reopened once.
  EXPECT_LE(after - before, 1) << beats.size() << " heartbeats seen on " << after - before << " new connections\n"
                               << c.agent("n1").stderr_text();
}

// A scheduler restarted under a running agent holds no inventory tag the agent knows:
// the agent sends its inventory whole once (its readings are refused, or its kept
// connection fails), then readings again, and the node's cards show the tool's values.
TEST(ClusterHeartbeats, AfterASchedulerRestartTheNodeKeepsItsCardsAndReadings) {
  Cluster c;
  c.agent_args = {"--heartbeat-interval", "0.1"};
  c.start_scheduler();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  c.stop_scheduler(SIGKILL);
  c.start_scheduler();
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  httplib::Client http("127.0.0.1", c.port());
  json node;
  std::set<std::string> beats;
  ASSERT_TRUE(eventually(
      [&] {
        auto r = http.Get("/v1/nodes/n1");
        if (!r || r->status != 200) return false;
        node = json::parse(r->body, nullptr, false);
        if (!node.is_object() || node.value("state", "") != "ready") return false;
        beats.insert(node.value("last_heartbeat", std::string()));
        return beats.size() >= 5;
      },
      30s))
      << c.agent("n1").stderr_text();
  const json& devices = node["inventory"]["devices"];
  ASSERT_EQ(devices.size(), 8u);
  // tests/fixtures/hl-smi/gaudi2-hl225-8.csv, index 1: 227 W, 31 C, 3 %, 688 MiB used.
  EXPECT_EQ(devices[1]["serial"], "AN123401");
  EXPECT_EQ(devices[1]["power_w"], 227);
  EXPECT_EQ(devices[1]["temperature_c"], 31);
  EXPECT_EQ(devices[1]["utilization_pct"], 3);
  EXPECT_EQ(devices[1]["memory_used_mib"], 688);
}

}  // namespace
