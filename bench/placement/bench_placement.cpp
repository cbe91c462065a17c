// bench_placement: (1) placement decisions per second with 10,000 Gaudi nodes of 8
// cards and a 1/2/4/8-card job mix; (2) a fragmentation comparison: one synthetic
// trace replayed with a simulated clock against ModuleGroupAllocator, first-fit
// valid-group and random valid-group placement. Prints tables; see RESULTS.md.
// Usage: bench_placement [--quick | --smoke]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace {

using tessel::scheduler::ModuleGroupAllocator;
using tessel::scheduler::NodeSpec;
using tessel::scheduler::PendingJob;

int random_size(std::mt19937& rng) {
  // 40% singles, 30% pairs, 20% quads, 10% whole nodes.
  int r = std::uniform_int_distribution<int>(0, 99)(rng);
  return r < 40 ? 1 : r < 70 ? 2 : r < 90 ? 4 : 8;
}

NodeSpec gaudi_node(int i) {
  NodeSpec n;
  n.name = "node" + std::to_string(i);
  for (int m = 0; m < 8; ++m) n.cards.push_back({m, m, "HL-225", true});
  return n;
}

// ---- (1) decisions per second ---------------------------------------------------

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct Throughput {
  double decisions_per_s = 0;      // Wall clock.
  double decisions_per_cpu_s = 0;  // Process CPU time (the build machine is shared).
  double placed_fraction = 0;
};

Throughput measure(int nodes, double fill, int batch, int decisions, uint32_t seed) {
  ModuleGroupAllocator a;
  for (int i = 0; i < nodes; ++i) a.upsert_node(gaudi_node(i));
  std::mt19937 rng(seed);
  std::vector<std::pair<std::string, int>> live;  // (job id, cards)
  long used = 0;
  const long target = static_cast<long>(fill * nodes * 8);
  int next = 0;
  auto new_job = [&] {
    PendingJob j;
    j.id = "j" + std::to_string(next);
    j.seq = next++;
    j.devices = random_size(rng);
    return j;
  };
  auto release_random = [&] {
    size_t k = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
    a.release(live[k].first);
    used -= live[k].second;
    live[k] = live.back();
    live.pop_back();
  };
  // Fill to the target first.
  while (used < target) {
    PendingJob j = new_job();
    auto r = a.schedule({j}, 0);
    if (r.placed.empty()) break;
    live.emplace_back(j.id, j.devices);
    used += j.devices;
  }
  long placed = 0;
  int done = 0;
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  while (done < decisions) {
    std::vector<PendingJob> q;
    for (int i = 0; i < batch; ++i) q.push_back(new_job());
    // Free roughly what the batch will take, keeping the fill level.
    while (!live.empty() && used > target - static_cast<long>(batch) * 26 / 10) release_random();
    auto r = a.schedule(q, 0);
    for (const auto& p : r.placed) {
      int cards = static_cast<int>(p.allocations[0].module_ids.size());
      live.emplace_back(p.job_id, cards);
      used += cards;
    }
    placed += static_cast<long>(r.placed.size());
    done += batch;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = cpu_seconds() - c0;
  return {done / secs, done / cpu, static_cast<double>(placed) / done};
}

// ---- (2) fragmentation comparison ------------------------------------------------

struct TraceJob {
  int size = 1;
  int64_t arrive_ms = 0;
  int64_t duration_ms = 0;
  int64_t limit_s = 0;  // Declared time limit >= duration; 0: none.
};

std::vector<TraceJob> make_trace(int count, int nodes, double load, uint32_t seed) {
  std::mt19937 rng(seed);
  const double mean_cards = 0.4 * 1 + 0.3 * 2 + 0.2 * 4 + 0.1 * 8;
  const double mean_duration_s = (5 + 120) / 2.0 * 60;
  const double rate = load * nodes * 8 / (mean_cards * mean_duration_s);  // Jobs per second.
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<int> minutes(5, 120);
  std::uniform_real_distribution<double> overestimate(1.0, 2.0);
  std::vector<TraceJob> out;
  double t = 0;
  for (int i = 0; i < count; ++i) {
    t += gap(rng);
    TraceJob j;
    j.size = random_size(rng);
    j.arrive_ms = static_cast<int64_t>(t * 1000);
    j.duration_ms = minutes(rng) * 60'000LL;
    j.limit_s = static_cast<int64_t>(j.duration_ms / 1000 * overestimate(rng)) + 1;
    out.push_back(j);
  }
  return out;
}

// The mixed burst of `WORKLOAD=mixed bench/slurm/run.sh`: 160 jobs of 1, 2, 4 and 8
// cards (80/40/24/16) in shuffled order, each running U(0.5, 2.5) s plus
// `turnaround_ms` (a task's exit to its cards being placed again), all queued at
// time 0, no time limits.
std::vector<TraceJob> make_burst(uint32_t seed, int64_t turnaround_ms) {
  std::mt19937 rng(seed);
  std::vector<int> sizes;
  for (auto [size, count] : {std::pair{1, 80}, std::pair{2, 40}, std::pair{4, 24}, std::pair{8, 16}})
    sizes.insert(sizes.end(), count, size);
  std::shuffle(sizes.begin(), sizes.end(), rng);
  std::uniform_real_distribution<double> seconds(0.5, 2.5);
  std::vector<TraceJob> out;
  for (int size : sizes) {
    TraceJob j;
    j.size = size;
    j.duration_ms = static_cast<int64_t>(seconds(rng) * 1000) + turnaround_ms;
    out.push_back(j);
  }
  return out;
}

// Makespan over its lower bound: max(card-ms / cards, the longest job).
double burst_makespan_ratio(const std::vector<TraceJob>& trace, double makespan_h, int nodes) {
  double card_ms = 0;
  int64_t longest = 0;
  for (const TraceJob& j : trace) {
    card_ms += static_cast<double>(j.size) * static_cast<double>(j.duration_ms);
    longest = std::max(longest, j.duration_ms);
  }
  double bound_ms = std::max(card_ms / (nodes * 8.0), static_cast<double>(longest));
  return makespan_h * 3'600'000.0 / bound_ms;
}

// One scheduling policy under simulation.
class SimPolicy {
 public:
  virtual ~SimPolicy() = default;
  // Starts what it can from `queue` (trace indices in arrival order); returns them.
  virtual std::vector<int> pass(const std::vector<int>& queue, const std::vector<TraceJob>& trace, int64_t now) = 0;
  virtual void finish(int job) = 0;
};

PendingJob pending(int idx, const TraceJob& t) {
  PendingJob j;
  j.id = std::to_string(idx);
  j.seq = idx;
  j.devices = t.size;
  if (t.limit_s > 0) j.time_limit_s = t.limit_s;
  return j;
}

// ModuleGroupAllocator with its own queue discipline (reservation + backfill).
class AllocatorPolicy : public SimPolicy {
 public:
  AllocatorPolicy(int nodes, bool greedy) : greedy_(greedy) {
    for (int i = 0; i < nodes; ++i) a_.upsert_node(gaudi_node(i));
  }
  std::vector<int> pass(const std::vector<int>& queue, const std::vector<TraceJob>& trace, int64_t now) override {
    std::vector<int> started;
    if (greedy_) {  // One job per call: best fit, no reservation, skip sizes that failed.
      std::set<int> failed;
      for (int idx : queue) {
        if (failed.count(trace[idx].size)) continue;
        auto r = a_.schedule({pending(idx, trace[idx])}, now);
        if (r.placed.empty()) {
          failed.insert(trace[idx].size);
        } else {
          started.push_back(idx);
        }
      }
      return started;
    }
    std::vector<PendingJob> q;
    q.reserve(queue.size());
    for (int idx : queue) q.push_back(pending(idx, trace[idx]));
    auto r = a_.schedule(q, now);
    for (const auto& p : r.placed) started.push_back(std::stoi(p.job_id));
    return started;
  }
  void finish(int job) override { a_.release(std::to_string(job)); }

 private:
  ModuleGroupAllocator a_;
  bool greedy_;
};

// First-fit or random valid group, greedy in arrival order (skip sizes that failed).
class BaselinePolicy : public SimPolicy {
 public:
  BaselinePolicy(tessel::bench::BaselinePlacer::Policy p, int nodes) : placer_(p, nodes, 12345) {}
  std::vector<int> pass(const std::vector<int>& queue, const std::vector<TraceJob>& trace, int64_t) override {
    std::vector<int> started;
    std::set<int> failed;
    for (int idx : queue) {
      int size = trace[idx].size;
      if (failed.count(size)) continue;
      auto c = placer_.find(size);
      if (!c) {
        failed.insert(size);
        continue;
      }
      placer_.take(*c);
      held_[idx] = *c;
      started.push_back(idx);
    }
    return started;
  }
  void finish(int job) override {
    placer_.give_back(held_.at(job));
    held_.erase(job);
  }

 private:
  tessel::bench::BaselinePlacer placer_;
  std::map<int, tessel::bench::BaselineChoice> held_;
};

struct SimStats {
  double idle_card_hours_waiting = 0;  // Free cards while at least one job waits.
  double idle_fraction = 0;            // ... as a share of all card-hours until the last job ends.
  double mean_wait_min = 0;
  double mean_wait_8_min = 0;  // 8-card jobs only.
  double p95_wait_min = 0;
  double makespan_h = 0;
};

SimStats simulate(SimPolicy& policy, const std::vector<TraceJob>& trace, int nodes) {
  using Done = std::pair<int64_t, int>;  // (end ms, job)
  std::priority_queue<Done, std::vector<Done>, std::greater<>> running;
  std::vector<int> queue;
  std::vector<double> waits;
  double waits8 = 0;
  int count8 = 0;
  size_t next = 0;
  int64_t now = 0;
  long free_cards = static_cast<long>(nodes) * 8;
  double idle_card_ms = 0;
  while (next < trace.size() || !running.empty() || !queue.empty()) {
    int64_t t = INT64_MAX;
    if (next < trace.size()) t = trace[next].arrive_ms;
    if (!running.empty()) t = std::min(t, running.top().first);
    if (t == INT64_MAX) {
      std::fprintf(stderr, "simulation stuck with %zu queued jobs\n", queue.size());
      std::exit(1);
    }
    if (!queue.empty()) idle_card_ms += static_cast<double>(free_cards) * (t - now);
    now = t;
    while (!running.empty() && running.top().first == now) {
      int j = running.top().second;
      running.pop();
      policy.finish(j);
      free_cards += trace[j].size;
    }
    while (next < trace.size() && trace[next].arrive_ms == now) queue.push_back(static_cast<int>(next++));
    std::vector<int> started = policy.pass(queue, trace, now);
    if (started.empty()) continue;
    std::set<int> gone(started.begin(), started.end());
    for (int j : started) {
      double w = (now - trace[j].arrive_ms) / 60'000.0;
      waits.push_back(w);
      if (trace[j].size == 8) {
        waits8 += w;
        ++count8;
      }
      free_cards -= trace[j].size;
      running.emplace(now + trace[j].duration_ms, j);
    }
    queue.erase(std::remove_if(queue.begin(), queue.end(), [&](int j) { return gone.count(j) > 0; }), queue.end());
  }
  SimStats s;
  s.idle_card_hours_waiting = idle_card_ms / 3'600'000.0;
  s.idle_fraction = idle_card_ms / (static_cast<double>(now) * nodes * 8);
  double sum = 0;
  for (double w : waits) sum += w;
  s.mean_wait_min = sum / static_cast<double>(waits.size());
  s.mean_wait_8_min = count8 ? waits8 / count8 : 0;
  std::sort(waits.begin(), waits.end());
  s.p95_wait_min = waits[static_cast<size_t>(0.95 * static_cast<double>(waits.size() - 1))];
  s.makespan_h = now / 3'600'000.0;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  // --quick: a tenth of the work; --smoke: a few hundred decisions and jobs, only to
  // show that the program still runs (ctest label bench-smoke).
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  if (argc > 1 && !quick && !smoke) {
    std::fprintf(stderr, "usage: bench_placement [--quick | --smoke]\n");
    return 2;
  }
  const int decisions = smoke ? 500 : quick ? 20'000 : 200'000;

  std::printf("== placement decisions per second: 10,000 nodes x 8 cards, 1/2/4/8 mix (40/30/20/10%%) ==\n");
  std::printf("(each decision includes the releases that keep the fill level)\n");
  std::printf("%-32s %16s %16s %10s\n", "scenario", "decisions/cpu-s", "decisions/wall-s", "placed");
  struct Scenario {
    const char* name;
    double fill;
    int batch;
  };
  for (const Scenario& s :
       {Scenario{"1 job per schedule(), 85% full", 0.85, 1}, Scenario{"1 job per schedule(), 97% full", 0.97, 1},
        Scenario{"1000 jobs per schedule(), 85%", 0.85, 1000}, Scenario{"1000 jobs per schedule(), 97%", 0.97, 1000}}) {
    Throughput t = measure(10'000, s.fill, s.batch, decisions, 7);
    std::printf("%-32s %16.0f %16.0f %9.1f%%\n", s.name, t.decisions_per_cpu_s, t.decisions_per_s,
                100 * t.placed_fraction);
  }

  const int nodes = 1000;
  const int jobs = smoke ? 300 : quick ? 8'000 : 40'000;
  for (double load : {0.95, 1.0}) {
    auto trace = make_trace(jobs, nodes, load, 2024);
    std::printf(
        "\n== fragmentation: %d jobs on %d nodes x 8 cards, offered load %.0f%%, durations 5-120 min, "
        "time limit = duration x U(1,2) ==\n",
        jobs, nodes, load * 100);
    std::printf("%-36s %14s %8s %10s %12s %10s %10s\n", "policy", "idle card-h*", "idle %", "mean wait", "8-card wait",
                "p95 wait", "makespan");
    struct Row {
      const char* name;
      std::function<std::unique_ptr<SimPolicy>()> make;
    };
    std::vector<Row> rows = {
        {"first-fit valid group (greedy)",
         [&] { return std::make_unique<BaselinePolicy>(tessel::bench::BaselinePlacer::Policy::first_fit, nodes); }},
        {"random valid group (greedy)",
         [&] { return std::make_unique<BaselinePolicy>(tessel::bench::BaselinePlacer::Policy::random_fit, nodes); }},
        {"tessel best-fit (greedy)", [&] { return std::make_unique<AllocatorPolicy>(nodes, true); }},
        {"tessel best-fit + reservation", [&] { return std::make_unique<AllocatorPolicy>(nodes, false); }},
    };
    std::optional<SimStats> first_fit;
    for (const Row& row : rows) {
      auto policy = row.make();
      SimStats s = simulate(*policy, trace, nodes);
      if (!first_fit) first_fit = s;
      auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
      std::printf("%-36s %14.0f %7.2f%% %8.1f m %10.1f m %8.1f m %8.2f h   (idle x%.2f, wait x%.2f vs first-fit)\n",
                  row.name, s.idle_card_hours_waiting, 100 * s.idle_fraction, s.mean_wait_min, s.mean_wait_8_min,
                  s.p95_wait_min, s.makespan_h, ratio(s.idle_card_hours_waiting, first_fit->idle_card_hours_waiting),
                  ratio(s.mean_wait_min, first_fit->mean_wait_min));
    }
  }
  std::printf("\n* idle card-h: card-hours a healthy card sat free while at least one job waited.\n");

  const int seeds = smoke ? 2 : 50;
  std::printf(
      "\n== mixed burst (bench/slurm WORKLOAD=mixed, simulated): 4 nodes x 8 cards, 160 jobs of 1/2/4/8 cards, "
      "U(0.5, 2.5) s + 15 ms turnaround, all queued at once, no time limits; %d seeds ==\n",
      seeds);
  std::printf("%-36s %12s %12s %12s\n", "policy", "mean ratio*", "p90 ratio", "max ratio");
  for (bool greedy : {true, false}) {
    std::vector<double> ratios;
    for (int seed = 1; seed <= seeds; ++seed) {
      auto trace = make_burst(static_cast<uint32_t>(seed), 15);
      AllocatorPolicy policy(4, greedy);
      ratios.push_back(burst_makespan_ratio(trace, simulate(policy, trace, 4).makespan_h, 4));
    }
    std::sort(ratios.begin(), ratios.end());
    double mean = 0;
    for (double r : ratios) mean += r / static_cast<double>(ratios.size());
    std::printf("%-36s %12.3f %12.3f %12.3f\n", greedy ? "tessel best-fit (greedy)" : "tessel best-fit + reservation",
                mean, ratios[static_cast<size_t>(0.9 * static_cast<double>(ratios.size() - 1))], ratios.back());
  }
  std::printf("* makespan / max(card-seconds / 32, longest job)\n");
  return 0;
}
