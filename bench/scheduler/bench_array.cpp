// bench_array [COUNT [NODES [SPEC_KIB]]]: the cost of one job array of COUNT elements
// (default 10,000) in the scheduler's ClusterState, on a SQLite file with --sync full
// (fsynced) in a temp dir. First, an array whose spec carries SPEC_KIB KiB of env
// (default 240, near the 256 KiB cap): its submission's time, and how much the
// process's memory (VmRSS) and the database grow (elements share the parent's spec).
// Then the submission (one write of COUNT + 1 jobs, answered once it is on
// disk), then scheduling passes with the array pending on NODES idle 8-card nodes
// (default 100): once with parallel 8 (the limit keeps all but 8 out of the
// allocator's queue), once without a limit, 8 cards an element, on nodes half full
// (every element goes to the allocator and none fits). Logging at warn (the
// scheduler's info lines, one per job changed, are left out). Prints the times;
// see RESULTS.md.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

double ms_since(Steady::time_point t0) { return std::chrono::duration<double, std::milli>(Steady::now() - t0).count(); }

double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

double file_mib(const std::string& path) {
  double n = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path + suffix, ec);
    if (!ec) n += static_cast<double>(size) / (1024.0 * 1024.0);
  }
  return n;
}


void add_nodes(ClusterState& state, int nodes) {
  for (int n = 0; n < nodes; ++n) {
    api::RegisterRequest r;
    r.node = "n" + std::to_string(n);
    r.address = "10.0.0." + std::to_string(n % 250);
    for (int i = 0; i < 8; ++i) {
      api::Device d;
      d.index = d.module_id = i;
      d.model = "HL-225";
      r.inventory.devices.push_back(d);
    }
    if (!state.register_node(r, "").ok()) std::fprintf(stderr, "register %s failed\n", r.node.c_str());
  }
}

api::JobSpec array_spec(int count, std::optional<int> parallel, int devices) {
  api::JobSpec s;
  s.command = {"python", "sweep.py", "--config", "configs/sweep.yaml"};
  s.env = {{"WANDB_PROJECT", "sweep"}};
  s.devices = devices;
  s.array = api::ArraySpec{count, parallel.value_or(count), {}};
  return s;
}

// Times `passes` scheduling passes; prints p50 and max.
void time_passes(ClusterState& state, int passes, const char* what) {
  std::vector<double> ms;
  for (int i = 0; i < passes; ++i) {
    auto t0 = Steady::now();
    state.schedule_pass();
    ms.push_back(ms_since(t0));
  }
  std::printf("  %-52s p50 %.2f ms, max %.2f ms (%d passes)\n", what, benchkit::percentile(ms, 50),
              benchkit::percentile(ms, 100), passes);
}

// COUNT elements of a spec with `kib` KiB of env: submission time, memory and database growth.
int big_spec(const benchkit::TempDir& dir, int count, int kib) {
  std::printf("array of %d, a spec of %d KiB (env):\n", count, kib);
  const std::string db = dir.str("big.db");
  auto store = open_sqlite_store(db);
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
  ClusterState state(**store, system_clock(), StateOptions{});
  if (!state.restore().ok()) return 1;
  api::JobSpec spec = array_spec(count, 8, 1);
  for (int i = 0; i < kib / 4; ++i) spec.env["V" + std::to_string(i)] = std::string(4096, 'x');
  const double rss0 = rss_mib(), db0 = file_mib(db);
  const auto t0 = Steady::now();
  const double c0 = benchkit::process_cpu_ms();
  if (auto p = state.submit(spec, "bench"); !p.ok())
    return std::fprintf(stderr, "submit: %s\n", p.error().message.c_str()), 1;
  std::printf("  submission (one write of %d jobs, fsynced):       %.1f ms (CPU %.1f ms)\n", count + 1, ms_since(t0),
              benchkit::process_cpu_ms() - c0);
  std::printf("  memory (VmRSS) grew %.1f MiB, the database %.1f MiB\n", rss_mib() - rss0, file_mib(db) - db0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::stoi(argv[1]) : 10'000;
  const int nodes = argc > 2 ? std::stoi(argv[2]) : 100;
  const int spec_kib = argc > 3 ? std::stoi(argv[3]) : 240;
  spdlog::set_level(spdlog::level::warn);
  const benchkit::TempDir dir("tessel-bench-array");
  if (int rc = big_spec(dir, count, spec_kib); rc != 0) return rc;
  {
    std::printf("array of %d, parallel 8, %d idle nodes:\n", count, nodes);
    auto store = open_sqlite_store(dir.str("limited.db"));
    if (!store.ok()) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
    ClusterState state(**store, system_clock(), StateOptions{});
    if (!state.restore().ok()) return 1;
    add_nodes(state, nodes);
    auto t0 = Steady::now();
    double c0 = benchkit::process_cpu_ms();
    auto parent = state.submit(array_spec(count, 8, 1), "bench");
    if (!parent.ok()) return std::fprintf(stderr, "submit: %s\n", parent.error().message.c_str()), 1;
    std::printf("  submission (one write of %d jobs, fsynced):       %.1f ms (CPU %.1f ms)\n", count + 1, ms_since(t0),
                benchkit::process_cpu_ms() - c0);
    t0 = Steady::now();
    state.schedule_pass();
    std::printf("  first pass (places 8, the rest wait at the limit): %.2f ms\n", ms_since(t0));
    time_passes(state, 20, "later passes (nothing changes):");
    t0 = Steady::now();
    auto got = state.job(parent->id);
    std::printf("  GET parent (counts by state):                      %.3f ms\n", ms_since(t0));
    t0 = Steady::now();
    c0 = benchkit::process_cpu_ms();
    auto cancelled = state.cancel(parent->id, Principal{"bench", Role::admin, "", {}});
    std::printf("  cancel parent (%d elements in one write):       %.1f ms (CPU %.1f ms)\n", count, ms_since(t0),
                benchkit::process_cpu_ms() - c0);
    if (!got || !cancelled.ok()) return 1;
  }
  {
    std::printf("array of %d x 8 cards, no limit, %d half-full nodes (all in the allocator's queue):\n", count, nodes);
    auto store = open_sqlite_store(dir.str("unlimited.db"));
    if (!store.ok()) return 1;
    ClusterState state(**store, system_clock(), StateOptions{});
    if (!state.restore().ok()) return 1;
    add_nodes(state, nodes);
    for (int n = 0; n < nodes; ++n) {
      api::JobSpec filler;
      filler.command = {"sleep", "infinity"};
      filler.devices = 4;
      if (!state.submit(filler, "bench").ok()) return 1;
    }
    state.schedule_pass();  // Two per node: half the nodes full, half idle.
    auto t0 = Steady::now();
    const double c0 = benchkit::process_cpu_ms();
    if (!state.submit(array_spec(count, std::nullopt, 8), "bench").ok()) return 1;
    std::printf("  submission (one write of %d jobs, fsynced):       %.1f ms (CPU %.1f ms)\n", count + 1, ms_since(t0),
                benchkit::process_cpu_ms() - c0);
    t0 = Steady::now();
    state.schedule_pass();
    std::printf("  first pass (one element on each idle node):        %.2f ms\n", ms_since(t0));
    // Every node is full now; a pass with nothing new is skipped, so each timed pass
    // follows a change of capacity (n0 drained, then undrained).
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      if (!state.set_drained("n0", i % 2 == 0).ok()) return 1;
      t0 = Steady::now();
      state.schedule_pass();
      ms.push_back(ms_since(t0));
    }
    std::printf("  passes over the %d pending elements, cluster full:  p50 %.2f ms, max %.2f ms (20 passes)\n",
                count - nodes / 2, benchkit::percentile(ms, 50), benchkit::percentile(ms, 100));
  }
  return 0;
}
