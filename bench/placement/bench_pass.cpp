// bench_pass: how long one scheduling pass takes with a long queue: 100,000 pending
// jobs across 50 projects on 1,000 Gaudi nodes of 8 cards, the cluster 97 % full
// with jobs that have time limits (so the first blocked job gets a reservation and
// the pass checks backfill for the rest). Two variants: plain (priority and
// submission order only) and with projects (fair-share factors, user usage, and a
// max quota for every project, checked per job). Each pass's placements are
// released again so every pass sees the same state. Prints p50/p99 per variant
// (plain; fair-share fields only; fair share and quotas) over 200 passes, and
// apart from them the first pass: it runs on memory the process has not touched
// yet (page faults), which a long-running scheduler pays once, not per pass. A
// fourth variant, "cpus + memory", has every node report 160 CPUs and 1 TiB and a
// third of the jobs ask CPUs and memory of their own (the rest take their share).
// Built with TESSEL_BENCH_NO_RESOURCES (a tree before CPUs were placed) it is left out.
// A fifth, "selectors" (issue 32), labels the nodes rack=r0..r19 (50 nodes a rack) and
// gives every third job a node_selector for one rack; TESSEL_BENCH_NO_CONSTRAINTS (a
// tree before node constraints) leaves it out. A sixth, "selectors + topology", adds the
// scheduler's topology key (rack) to that and makes every 100th job a gang of 2 to 4
// nodes, half of them with topology {"required": "rack"}, the rest preferring one rack
// (the default with a key); TESSEL_BENCH_NO_TOPOLOGY leaves it out.
// Usage: bench_pass [--quick] [--only VARIANT]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "tessel/scheduler/allocator.hpp"

namespace {

using tessel::scheduler::ModuleGroupAllocator;
using tessel::scheduler::NodeSpec;
using tessel::scheduler::PendingJob;

constexpr int kNodes = 1000;
constexpr int kProjects = 50;

constexpr int kRacks = 20;

NodeSpec gaudi_node(int i, bool resources, bool labels) {
  NodeSpec n;
  n.name = "node" + std::to_string(i);
#ifndef TESSEL_BENCH_NO_CONSTRAINTS
  if (labels) n.labels["rack"] = "r" + std::to_string(i % kRacks);
#else
  (void)labels;
#endif
  for (int m = 0; m < 8; ++m) n.cards.push_back({m, m, "HL-225", true});
#ifndef TESSEL_BENCH_NO_RESOURCES
  if (resources) {
    n.cpus = 160;
    n.memory_mib = 1 << 20;
  }
#else
  (void)resources;
#endif
  return n;
}

int random_size(std::mt19937& rng) {
  int r = std::uniform_int_distribution<int>(0, 99)(rng);
  return r < 40 ? 1 : r < 70 ? 2 : r < 90 ? 4 : 8;
}

struct Stats {
  double first_ms = 0;                        // The first pass (cold memory).
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // Process CPU time per pass after the first (the machine may be shared).
  double wall_p50_ms = 0;
  size_t placed = 0;
};

Stats run(bool projects, bool quotas, bool resources, bool selectors, bool topology, int passes, int queue_len) {
  std::mt19937 rng(42);
  ModuleGroupAllocator a;
#ifndef TESSEL_BENCH_NO_TOPOLOGY
  if (topology) a.set_topology_levels({"rack"});
  tessel::api::NodeConstraints one_rack;
  one_rack.topology.required = "rack";
#else
  (void)topology;
#endif
  for (int i = 0; i < kNodes; ++i) a.upsert_node(gaudi_node(i, resources, selectors));
#ifndef TESSEL_BENCH_NO_CONSTRAINTS
  std::vector<tessel::api::NodeConstraints> racks(kRacks);
  for (int r = 0; r < kRacks; ++r) racks[static_cast<size_t>(r)].node_selector["rack"] = "r" + std::to_string(r);
#endif
  // Fill to ~97 % with running jobs that end within 1..10 hours.
  int64_t cards = 0, seq = 0;
  while (cards < kNodes * 8 * 97 / 100) {
    PendingJob j;
    j.id = "r" + std::to_string(++seq);
    j.devices = random_size(rng);
    j.seq = seq;
    j.time_limit_s = std::uniform_int_distribution<int64_t>(3600, 36000)(rng);
    auto r = a.schedule({j}, 0);
    if (r.placed.empty()) break;
    cards += j.devices;
  }
  std::vector<PendingJob> queue;
  queue.reserve(static_cast<size_t>(queue_len));
  for (int i = 0; i < queue_len; ++i) {
    PendingJob j;
    j.id = "j" + std::to_string(++seq);
    j.devices = random_size(rng);
    j.seq = seq;
    j.priority = std::uniform_int_distribution<int>(0, 3)(rng);
    if (i % 2) j.time_limit_s = std::uniform_int_distribution<int64_t>(600, 7200)(rng);
#ifndef TESSEL_BENCH_NO_RESOURCES
    if (resources && i % 3 == 0) {
      j.cpus = std::uniform_int_distribution<int>(4, 40)(rng);
      j.memory_mib = int64_t{j.cpus} * 4096;
    }
#endif
#ifndef TESSEL_BENCH_NO_CONSTRAINTS
    if (selectors && i % 3 == 0) j.constraints = &racks[static_cast<size_t>((i / 3) % kRacks)];
#endif
#ifndef TESSEL_BENCH_NO_TOPOLOGY
    if (topology && i % 100 == 1) {
      j.nodes = 2 + (i / 100) % 3;
      if ((i / 100) % 2 == 0) j.constraints = &one_rack;
    }
#endif
#ifndef TESSEL_BENCH_NO_PROJECTS
    if (projects) {
      j.project = static_cast<int32_t>(i % kProjects);
      j.fair_share = 0.3 + 0.01 * (i % kProjects);
      j.user_usage = static_cast<double>(i % 500);
    }
#endif
    queue.push_back(std::move(j));
  }
  std::vector<double> ms, wall;
  size_t placed = 0;
  for (int p = 0; p < passes; ++p) {
#ifndef TESSEL_BENCH_NO_PROJECTS
    std::vector<tessel::scheduler::ProjectLimits> limits;
    for (int k = 0; k < kProjects; ++k)
      limits.push_back({"p" + std::to_string(k), {{"*", 100}, {"HL-225", 100}}, {{"*", 200}, {"HL-225", 200}}, {}});
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    auto r = a.schedule(queue, 60'000, quotas ? &limits : nullptr);
#else
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    auto r = a.schedule(queue, 60'000);
#endif
    const std::clock_t c1 = std::clock();
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(1000.0 * static_cast<double>(c1 - c0) / CLOCKS_PER_SEC);
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    placed = r.placed.size();
    for (const auto& pl : r.placed) a.release(pl.job_id);
  }
  Stats s;
  s.first_ms = ms.front();
  ms.erase(ms.begin());
  wall.erase(wall.begin());
  std::sort(ms.begin(), ms.end());
  std::sort(wall.begin(), wall.end());
  // Nearest rank: the smallest sample with at least p of the samples at or below it.
  auto rank = [&](double p) { return ms[static_cast<size_t>(std::ceil(p * static_cast<double>(ms.size()))) - 1]; };
  s.wall_p50_ms = wall[wall.size() / 2];
  s.p50_ms = rank(0.50);
  s.p99_ms = rank(0.99);
  s.max_ms = ms.back();
  s.placed = placed;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  const char* only = nullptr;  // --only NAME: that variant alone (for a profiler).
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
  }
  const int passes = 1 + (quick ? 5 : 200);
  std::printf("== one scheduling pass: 100,000 pending jobs, %d projects, %d nodes x 8 cards, 97%% full ==\n",
              kProjects, kNodes);
  std::printf("%-22s %12s %12s %12s %12s %13s %7s\n", "variant", "cpu p50 ms", "cpu p99 ms", "cpu max ms", "first pass",
              "wall p50 ms", "placed");
  struct Variant {
    const char* name;
    bool projects, quotas, resources, selectors, topology;
  };
  for (const Variant& v :
       {Variant{"plain", false, false, false, false, false}, Variant{"fair share", true, false, false, false, false},
        Variant{"fair share + quotas", true, true, false, false, false},
        Variant{"cpus + memory", false, false, true, false, false},
        Variant{"selectors", false, false, false, true, false},
        Variant{"selectors + topology", false, false, false, true, true}}) {
    if (only != nullptr && std::strcmp(only, v.name) != 0) continue;
#ifdef TESSEL_BENCH_NO_PROJECTS
    if (v.projects) continue;
#endif
#ifdef TESSEL_BENCH_NO_RESOURCES
    if (v.resources) continue;
#endif
#ifdef TESSEL_BENCH_NO_CONSTRAINTS
    if (v.selectors) continue;
#endif
#ifdef TESSEL_BENCH_NO_TOPOLOGY
    if (v.topology) continue;
#endif
    Stats s = run(v.projects, v.quotas, v.resources, v.selectors, v.topology, passes, 100'000);
    std::printf("%-22s %12.2f %12.2f %12.2f %12.2f %13.2f %7zu\n", v.name, s.p50_ms, s.p99_ms, s.max_ms, s.first_ms,
                s.wall_p50_ms, s.placed);
  }
  return 0;
}
