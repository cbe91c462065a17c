// The scheduler's long-poll limit with the real binaries: with --max-long-polls 1
// it holds one long poll, so of two agents one is told to poll again later. Both nodes still get and run their jobs,
// and the scheduler keeps answering.
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

}  // namespace
