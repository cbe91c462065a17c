#pragma once
// bench_load's flags, and the agent timings its simulated nodes keep.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace tessel::bench_load {

struct Options {
  std::vector<int> nodes = {1000, 5000};
  double seconds = 30;
  double interval = 5;
  double warmup = -1;  // < 0: one interval.
  int hb_threads = 1;
  int reg_threads = 64;
  int report_every = 6;  // Heartbeats per report; 0: no reports.
  int source_ips = 0;    // 0: sources_for().
  bool long_poll = true;
  bool nodelay = true;        // TCP_NODELAY and one write per request (the agent does both).
  bool hb_keep_alive = true;  // Keep heartbeat connections open, as the agent does.
  bool readings = true;       // Heartbeats carry readings once the scheduler gave a tag.
  std::string scheduler = TESSEL_SCHEDULER_BIN;
  std::string scheduler_log_level = "warn";
  std::vector<std::string> scheduler_args;  // --scheduler-arg, repeated.
  // --db: the scheduler's database; empty: a fresh SQLite file per node count. A
  // postgresql:// URI is used as is for every node count (give one count, an empty database).
  std::string db;
};

// The source addresses `n` nodes need so that each uses at most half of its ~28,000
// ephemeral ports: a port per kept connection, and one per connection closed in the
// last 60 s (TIME_WAIT).
inline int sources_for(const Options& o, int n) {
  const double per_node = (o.long_poll ? 1.0 : 0.0) + (o.hb_keep_alive ? 1.0 : 60.0 / o.interval) +
                          (o.report_every > 0 ? 60.0 / (o.interval * o.report_every) : 0.0);
  return std::clamp(static_cast<int>(std::ceil(n * per_node / 14000.0)), 1, 250);
}

inline constexpr int kPollWaitS = 30;                           // The agent's long-poll wait.
inline constexpr auto kReadTimeout = std::chrono::seconds(10);  // The agent's read timeout for a heartbeat or a report.

}  // namespace tessel::bench_load
