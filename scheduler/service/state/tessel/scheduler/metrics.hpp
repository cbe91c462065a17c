#pragma once
// Prometheus text exposition (format 0.0.4) for GET /metrics: a Histogram
// type the cluster state fills, the StatsSnapshot it hands out, and the
// renderer. Not thread-safe: the owner (ClusterState) guards them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessel::scheduler {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // Per bucket, not cumulative.
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct CardTelemetry {
  std::string node;
  int module_id = 0;
  std::string model;
  std::optional<double> utilization_ratio;
  std::optional<double> memory_used_bytes;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};

struct CardCounts {
  int64_t total = 0, free = 0, unhealthy = 0;
};

// One project's gauges. Maps are by card model; "*" counts every model (as quotas do).
struct ProjectStats {
  std::string name;
  std::map<std::string, int64_t> held;        // Cards its assigned and running jobs hold.
  std::map<std::string, int64_t> guaranteed;  // From its quotas.
  std::map<std::string, int64_t> max;         // Quotas with a max only.
  int64_t pending = 0;                        // Pending jobs, those waiting for dependencies included.
  double fair_share = 1;
  std::optional<int64_t> max_active_jobs_per_user;  // The project's own limit, if set.
};

struct StatsSnapshot {
  std::map<std::string, int64_t> jobs_by_state;   // Every state present, zeros included.
  std::map<std::string, int64_t> nodes_by_state;  // ready, draining, down.
  std::map<std::string, CardCounts> cards_by_model;
  std::map<std::string, bool> version_skew_by_model;  // VersionCensus::skew().
  std::vector<CardTelemetry> cards;
  uint64_t submissions_total = 0;
  uint64_t submissions_refused_total = 0;  // At a tenant limit (429).
  int64_t active_jobs = 0;                 // Not yet ended, array elements each, parents not.
  int64_t active_jobs_max_of_a_user = 0;
  int64_t max_active_jobs = 0, max_active_jobs_per_user = 0;  // 0: no limit.
  uint64_t placements_total = 0;
  uint64_t preemptions_total = 0;
  uint64_t store_write_failures_total = 0;
  bool storage_ok = true;
  int64_t long_polls_waiting = 0;
  int64_t long_polls_max = 0;  // 0: no limit.
  uint64_t long_polls_shed_total = 0;
  std::map<std::string, uint64_t> agent_epoch_refusals;  // By node; nodes whose agent refused none are left out.
  Histogram queue_wait{{}};
  Histogram scheduling_latency{{}};
  std::vector<ProjectStats> projects;
  std::map<std::pair<std::string, std::string>, double> usage_card_seconds;  // (project, model) -> ended attempts'.
};

// The scheduler's own event counters, kept by its owner (ClusterState) under its
// mutex and copied into each snapshot.
struct SchedulerCounters {
  uint64_t submissions_total = 0;
  uint64_t submissions_refused_total = 0;  // At a tenant limit.
  uint64_t placements_total = 0;
  uint64_t preemptions_total = 0;
  Histogram queue_wait{{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400}};  // Seconds.
  Histogram scheduling_latency{
      {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};  // Seconds.
  void copy_to(StatsSnapshot& s) const {
    s.submissions_total = submissions_total;
    s.submissions_refused_total = submissions_refused_total;
    s.placements_total = placements_total;
    s.preemptions_total = preemptions_total;
    s.queue_wait = queue_wait;
    s.scheduling_latency = scheduling_latency;
  }
};

std::string render_metrics(const StatsSnapshot& s);
// Escapes a label value: backslash, double quote and newline.
std::string escape_label(const std::string& v);

}  // namespace tessel::scheduler
