// bench_reports [NODES]: what an agent's messages cost the scheduler when the cluster
// is full of running jobs. ClusterState in-process on a SQLite file (--sync full, in a
// temp dir), NODES (default 2,000) 8-card nodes, one 1-card job per card (8 x NODES
// running jobs). Times, each over every node: a report of the node's 8 tasks still
// running (what an agent sends after a restart or with its heartbeat: nothing changes,
// nothing is written), a long poll answered at once (the node's assignments), and then
// churn on 500 nodes: one task exits, its job succeeds, a new job is submitted and a
// pass places it (the pass picks the new job's master port among the node's jobs).
// Logging at warn. Prints the times; see RESULTS.md.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "benchkit.hpp"
#include "tessel/scheduler/state.hpp"
#include "tessel/time/clock.hpp"

namespace {

using namespace tessel;
using namespace tessel::scheduler;
using Steady = std::chrono::steady_clock;

double us_since(Steady::time_point t0) { return std::chrono::duration<double, std::micro>(Steady::now() - t0).count(); }

std::string node_name(int n) { return "n" + std::to_string(n); }

void print(const char* what, std::vector<double> us, double cpu) {
  std::printf("  %-46s p50 %8.1f us  p99 %8.1f us  max %9.1f us  CPU %8.1f ms (%zu)\n", what,
              benchkit::percentile(us, 50), benchkit::percentile(us, 99), benchkit::percentile(us, 100), cpu,
              us.size());
}

// Every job on `node` by the assignments its long poll would get.
std::vector<api::Assignment> assignments_of(ClusterState& state, const std::string& node) {
  std::vector<api::Assignment> out;
  auto w = state.watch_desired(node, -1, [&](const Result<api::DesiredState>& d) { out = d->assignments; });
  if (!w.ok()) std::fprintf(stderr, "watch %s: %s\n", node.c_str(), w.error().message.c_str());
  return out;
}

api::ReportRequest report_of(const std::string& node, const std::vector<api::Assignment>& as) {
  api::ReportRequest r;
  r.node = node;
  for (const auto& a : as) {
    api::TaskReport t;
    t.assignment_id = a.id;
    t.state = api::TaskState::running;
    r.tasks.push_back(t);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::stoi(argv[1]) : 2'000;
  const int churn = std::min(nodes, 500);
  spdlog::set_level(spdlog::level::warn);
  const benchkit::TempDir dir("tessel-bench-reports");
  auto store = open_sqlite_store(dir.str("state.db"));
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
  ClusterState state(**store, system_clock(), StateOptions{});
  if (!state.restore().ok()) return 1;
  for (int n = 0; n < nodes; ++n) {
    api::RegisterRequest r;
    r.node = node_name(n);
    r.address = "10.0." + std::to_string(n / 250) + "." + std::to_string(n % 250);
    for (int i = 0; i < 8; ++i) {
      api::Device d;
      d.index = d.module_id = i;
      d.model = "HL-225";
      r.inventory.devices.push_back(d);
    }
    if (!state.register_node(r, "").ok()) return std::fprintf(stderr, "register %s failed\n", r.node.c_str()), 1;
  }
  api::JobSpec one_card;
  one_card.command = {"sleep", "infinity"};
  one_card.devices = 1;
  for (int j = 0; j < nodes * 8; ++j)
    if (!state.submit(one_card, "bench").ok()) return std::fprintf(stderr, "submit failed\n"), 1;
  state.schedule_pass();
  std::printf("%d nodes, %d running 1-card jobs:\n", nodes, nodes * 8);

  std::vector<std::vector<api::Assignment>> on(static_cast<size_t>(nodes));
  std::vector<double> us;
  double c0 = benchkit::process_cpu_ms();
  for (int n = 0; n < nodes; ++n) {
    auto t0 = Steady::now();
    on[static_cast<size_t>(n)] = assignments_of(state, node_name(n));
    us.push_back(us_since(t0));
  }
  print("long poll answered at once (8 assignments):", us, benchkit::process_cpu_ms() - c0);
  size_t placed = 0;
  for (const auto& a : on) placed += a.size();
  if (placed != static_cast<size_t>(nodes) * 8) return std::fprintf(stderr, "placed %zu jobs\n", placed), 1;

  // Every node reports its 8 tasks running; the first time moves its jobs to running.
  auto report_all = [&](const char* what) {
    std::vector<double> report_us;
    const double cpu0 = benchkit::process_cpu_ms();
    for (int n = 0; n < nodes; ++n) {
      auto t0 = Steady::now();
      if (!state.report(report_of(node_name(n), on[static_cast<size_t>(n)]), "").ok()) return false;
      report_us.push_back(us_since(t0));
    }
    print(what, report_us, benchkit::process_cpu_ms() - cpu0);
    return true;
  };
  if (!report_all("first report, 8 tasks running (one write):")) return 1;
  if (!report_all("report again, nothing changed:")) return 1;

  std::vector<double> exit_us, pass_us;
  c0 = benchkit::process_cpu_ms();
  for (int n = 0; n < churn; ++n) {
    auto r = report_of(node_name(n), on[static_cast<size_t>(n)]);
    r.tasks.front().state = api::TaskState::exited;
    r.tasks.front().exit_code = 0;
    auto t0 = Steady::now();
    if (!state.report(r, "").ok()) return 1;
    exit_us.push_back(us_since(t0));
    if (!state.submit(one_card, "bench").ok()) return 1;
    t0 = Steady::now();
    state.schedule_pass();
    pass_us.push_back(us_since(t0));
  }
  const double churn_cpu = benchkit::process_cpu_ms() - c0;
  print("report of an exit (job succeeds, one write):", exit_us, churn_cpu);
  print("pass placing the job that replaces it:", pass_us, 0);
  return 0;
}
