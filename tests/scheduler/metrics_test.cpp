// GET /metrics: Prometheus text format 0.0.4, checked line by line.
#include <regex>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "tessel/scheduler/metrics.hpp"

namespace tessel::scheduler::testing {
namespace {

TEST(Metrics, ExpositionIsWellFormed) {
  Harness h;
  h.register_node("n1");
  auto job = h.submit({{"command", {"x"}}, {"devices", 2}});
  ASSERT_TRUE(h.wait_state(job["id"], "assigned"));
  auto r = h.get("/metrics");
  ASSERT_EQ(r->status, 200);
  const std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN)$)");
  const std::regex type_line(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  std::map<std::string, std::string> types;
  std::istringstream in(r->body);
  std::string line;
  std::map<std::string, std::vector<double>> buckets;
  std::set<std::string> names;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, type_line)) {
      types[m[1]] = m[2];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    std::string name = m[1];
    names.insert(name);
    std::string base = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (base.size() > strlen(suffix) && base.substr(base.size() - strlen(suffix)) == suffix &&
          types.count(base.substr(0, base.size() - strlen(suffix))))
        base = base.substr(0, base.size() - strlen(suffix));
    ASSERT_TRUE(types.count(base)) << "no TYPE for " << line;
    const bool total = base.size() > 6 && base.substr(base.size() - 6) == "_total";
    EXPECT_EQ(total, types[base] == "counter") << base << ": _total exactly on counters";
    if (name.size() > 7 && name.substr(name.size() - 7) == "_bucket") buckets[base].push_back(std::stod(m[5]));
  }
  for (const auto& [name, type] : types) {
    if (type != "histogram") continue;
    const auto& b = buckets[name];
    ASSERT_FALSE(b.empty()) << name;
    for (size_t i = 1; i < b.size(); ++i) EXPECT_LE(b[i - 1], b[i]) << name << " buckets not cumulative";
    EXPECT_NE(r->body.find(name + "_bucket{le=\"+Inf\"}"), std::string::npos);
    EXPECT_TRUE(names.count(name + "_sum") && names.count(name + "_count")) << name;
  }
  for (const char* want :
       {"tessel_jobs", "tessel_queue_wait_seconds", "tessel_scheduling_latency_seconds", "tessel_job_submissions_total",
        "tessel_job_placements_total", "tessel_nodes", "tessel_cards", "tessel_card_utilization_ratio",
        "tessel_card_memory_used_bytes", "tessel_card_temperature_celsius", "tessel_card_power_watts",
        "tessel_http_connections", "tessel_http_connections_total", "tessel_http_connections_rejected_total",
        "tessel_http_timeouts_total"})
    EXPECT_TRUE(types.count(want)) << want;
  EXPECT_NE(r->body.find("tessel_jobs{state=\"assigned\"} 1"), std::string::npos);
  EXPECT_NE(r->body.find("tessel_cards{model=\"HL-225\",state=\"free\"} 6"), std::string::npos);
  EXPECT_NE(r->body.find("tessel_card_utilization_ratio{node=\"n1\",module_id=\"0\",model=\"HL-225\"} 0.1"),
            std::string::npos);
  EXPECT_NE(r->body.find("tessel_job_placements_total 1"), std::string::npos);
}

// An agent's heartbeat reports the answers of an old leader epoch it refused: the
// scheduler shows its count by node (no line for a node that refused none).
TEST(Metrics, AgentEpochRefusalsFromHeartbeats) {
  Harness h;
  h.register_node("n1");
  h.register_node("n2");
  auto r = h.post("/v1/agent/heartbeat", {{"node", "n1"},
                                          {"inventory", gaudi_inventory()},
                                          {"epoch_refusals", {{"total", 3}, {"last_epoch", 1}, {"highest", 2}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto m = h.get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("# TYPE tessel_agent_epoch_refusals_total counter\n"), std::string::npos);
  EXPECT_NE(m->body.find("tessel_agent_epoch_refusals_total{node=\"n1\"} 3\n"), std::string::npos) << m->body;
  EXPECT_EQ(m->body.find("tessel_agent_epoch_refusals_total{node=\"n2\"}"), std::string::npos) << m->body;
  r = h.post("/v1/agent/heartbeat", {{"node", "n1"}, {"inventory", gaudi_inventory()}, {"epoch_refusals", -1}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

TEST(Metrics, LabelValuesAreEscaped) { EXPECT_EQ(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd"); }

TEST(Metrics, HistogramBuckets) {
  Histogram hist({1, 2});
  hist.observe(0.5);
  hist.observe(1.5);
  hist.observe(5);
  StatsSnapshot s;
  s.queue_wait = hist;
  auto text = render_metrics(s);
  EXPECT_NE(text.find("tessel_queue_wait_seconds_bucket{le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("tessel_queue_wait_seconds_bucket{le=\"2\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("tessel_queue_wait_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("tessel_queue_wait_seconds_sum 7\n"), std::string::npos);
}

}  // namespace
}  // namespace tessel::scheduler::testing
