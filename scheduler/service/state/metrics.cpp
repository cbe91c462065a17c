#include "tessel/scheduler/metrics.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessel::scheduler {

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (v <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  }
  sum_ += v;
  ++count_;
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // Shortest form that reads back exactly.
  return std::string(buf, r.ptr);
}

void header(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

void histogram(std::ostringstream& o, const char* name, const char* help, const Histogram& h) {
  header(o, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cum += h.counts()[i];
    o << name << "_bucket{le=\"" << num(h.bounds()[i]) << "\"} " << cum << '\n';
  }
  o << name << "_bucket{le=\"+Inf\"} " << h.count() << '\n';
  o << name << "_sum " << num(h.sum()) << '\n' << name << "_count " << h.count() << '\n';
}

void card_gauge(std::ostringstream& o, const char* name, const char* help, const std::vector<CardTelemetry>& cards,
                std::optional<double> CardTelemetry::*field) {
  header(o, name, "gauge", help);
  for (const auto& c : cards) {
    if (!(c.*field)) continue;
    o << name << "{node=\"" << escape_label(c.node) << "\",module_id=\"" << c.module_id << "\",model=\""
      << escape_label(c.model) << "\"} " << num(*(c.*field)) << '\n';
  }
}

void project_model_gauge(std::ostringstream& o, const char* name, const char* help,
                         const std::vector<ProjectStats>& projects,
                         std::map<std::string, int64_t> ProjectStats::*field) {
  header(o, name, "gauge", help);
  for (const auto& p : projects)
    for (const auto& [model, n] : p.*field)
      o << name << "{project=\"" << escape_label(p.name) << "\",model=\"" << escape_label(model) << "\"} " << n << '\n';
}

void render_project_metrics(std::ostringstream& o, const StatsSnapshot& s) {
  project_model_gauge(o, "tessel_project_cards_held",
                      "Cards held by the project's assigned and running jobs (model \"*\": all).", s.projects,
                      &ProjectStats::held);
  project_model_gauge(o, "tessel_project_cards_guaranteed", "Cards guaranteed to the project by its quotas.",
                      s.projects, &ProjectStats::guaranteed);
  project_model_gauge(o, "tessel_project_cards_max", "Most cards the project may hold (quotas with a max only).",
                      s.projects, &ProjectStats::max);
  header(o, "tessel_project_pending_jobs", "gauge",
         "Pending jobs of the project, those waiting for dependencies included.");
  for (const auto& p : s.projects)
    o << "tessel_project_pending_jobs{project=\"" << escape_label(p.name) << "\"} " << p.pending << '\n';
  header(o, "tessel_project_fairshare_factor", "gauge",
         "Fair-share factor of the project: 1 unused, 0.5 at its share of recent usage, towards 0 above.");
  for (const auto& p : s.projects)
    o << "tessel_project_fairshare_factor{project=\"" << escape_label(p.name) << "\"} " << num(p.fair_share) << '\n';
  header(o, "tessel_project_max_active_jobs_per_user", "gauge",
         "A project's own limit of jobs not yet ended per user (projects that set one).");
  for (const auto& p : s.projects)
    if (p.max_active_jobs_per_user)
      o << "tessel_project_max_active_jobs_per_user{project=\"" << escape_label(p.name) << "\"} "
        << *p.max_active_jobs_per_user << '\n';
  header(o, "tessel_usage_card_seconds_total", "counter", "Card-seconds of ended job attempts (accounting).");
  for (const auto& [key, v] : s.usage_card_seconds)
    o << "tessel_usage_card_seconds_total{project=\"" << escape_label(key.first) << "\",model=\""
      << escape_label(key.second) << "\"} " << num(v) << '\n';
}

}  // namespace

std::string render_metrics(const StatsSnapshot& s) {
  std::ostringstream o;
  header(o, "tessel_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, n] : s.jobs_by_state)
    o << "tessel_jobs{state=\"" << escape_label(state) << "\"} " << n << '\n';
  header(o, "tessel_job_submissions_total", "counter", "Jobs accepted by POST /v1/jobs.");
  o << "tessel_job_submissions_total " << s.submissions_total << '\n';
  header(o, "tessel_job_submissions_refused_total", "counter",
         "Submissions refused at a tenant limit (429: active jobs per user, per project, in all).");
  o << "tessel_job_submissions_refused_total " << s.submissions_refused_total << '\n';
  header(o, "tessel_jobs_active", "gauge", "Jobs not yet ended (array elements each), as the limits count them.");
  o << "tessel_jobs_active " << s.active_jobs << '\n';
  // The busiest user's count, not each user's: /metrics needs no token, and user names stay private.
  header(o, "tessel_user_jobs_active_max", "gauge", "Jobs not yet ended of the user who has the most.");
  o << "tessel_user_jobs_active_max " << s.active_jobs_max_of_a_user << '\n';
  header(o, "tessel_limit_max_active_jobs", "gauge", "--max-active-jobs (0: no limit).");
  o << "tessel_limit_max_active_jobs " << s.max_active_jobs << '\n';
  header(o, "tessel_limit_max_active_jobs_per_user", "gauge", "--max-active-jobs-per-user (0: no limit).");
  o << "tessel_limit_max_active_jobs_per_user " << s.max_active_jobs_per_user << '\n';
  header(o, "tessel_job_placements_total", "counter", "Job attempts placed on cards.");
  o << "tessel_job_placements_total " << s.placements_total << '\n';
  header(o, "tessel_preemptions_total", "counter",
         "Running jobs preempted (stopped and requeued) for a project's guarantee.");
  o << "tessel_preemptions_total " << s.preemptions_total << '\n';
  header(o, "tessel_store_write_failures_total", "counter",
         "Writes to the scheduler's database that failed (disk full, read-only, I/O error).");
  o << "tessel_store_write_failures_total " << s.store_write_failures_total << '\n';
  header(o, "tessel_store_healthy", "gauge", "1 while the last database write succeeded, else 0.");
  o << "tessel_store_healthy " << (s.storage_ok ? 1 : 0) << '\n';
  header(o, "tessel_agent_long_polls", "gauge", "Agent long polls (assignment requests) held open now.");
  o << "tessel_agent_long_polls " << s.long_polls_waiting << '\n';
  if (s.long_polls_max > 0) {
    header(o, "tessel_agent_long_polls_max", "gauge",
           "Most long polls held at once (--max-long-polls); past it agents are told to poll again later.");
    o << "tessel_agent_long_polls_max " << s.long_polls_max << '\n';
  }
  header(o, "tessel_agent_long_polls_shed_total", "counter",
         "Long polls answered at once with poll_after_ms because the limit was reached.");
  o << "tessel_agent_long_polls_shed_total " << s.long_polls_shed_total << '\n';
  header(o, "tessel_agent_epoch_refusals_total", "counter",
         "Answers of an old leader epoch the node's agent refused since it started, as its heartbeats report.");
  for (const auto& [node, n] : s.agent_epoch_refusals)
    o << "tessel_agent_epoch_refusals_total{node=\"" << escape_label(node) << "\"} " << n << '\n';
  histogram(o, "tessel_queue_wait_seconds", "Time from submission (or requeue) to placement.", s.queue_wait);
  histogram(o, "tessel_scheduling_latency_seconds", "Duration of one scheduling pass.", s.scheduling_latency);
  header(o, "tessel_nodes", "gauge", "Nodes by state.");
  for (const auto& [state, n] : s.nodes_by_state)
    o << "tessel_nodes{state=\"" << escape_label(state) << "\"} " << n << '\n';
  header(o, "tessel_cards", "gauge", "Accelerator cards by model and state (total, free, unhealthy).");
  for (const auto& [model, c] : s.cards_by_model) {
    auto m = escape_label(model);
    o << "tessel_cards{model=\"" << m << "\",state=\"total\"} " << c.total << '\n';
    o << "tessel_cards{model=\"" << m << "\",state=\"free\"} " << c.free << '\n';
    o << "tessel_cards{model=\"" << m << "\",state=\"unhealthy\"} " << c.unhealthy << '\n';
  }
  header(o, "tessel_model_version_skew", "gauge",
         "1 when nodes with cards of this model report different driver or firmware versions, else 0.");
  for (const auto& [model, skewed] : s.version_skew_by_model)
    o << "tessel_model_version_skew{model=\"" << escape_label(model) << "\"} " << (skewed ? 1 : 0) << '\n';
  card_gauge(o, "tessel_card_utilization_ratio", "Card utilization, 0..1.", s.cards, &CardTelemetry::utilization_ratio);
  card_gauge(o, "tessel_card_memory_used_bytes", "Card memory in use.", s.cards, &CardTelemetry::memory_used_bytes);
  card_gauge(o, "tessel_card_temperature_celsius", "Card temperature.", s.cards, &CardTelemetry::temperature_c);
  card_gauge(o, "tessel_card_power_watts", "Card power draw.", s.cards, &CardTelemetry::power_w);
  render_project_metrics(o, s);
  return o.str();
}

}  // namespace tessel::scheduler
