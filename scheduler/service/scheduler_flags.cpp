// tessel-scheduler's flags: what each means, and the checks that turn them into the
// service's options (tessel/scheduler/scheduler_flags.hpp).

#include "tessel/scheduler/scheduler_flags.hpp"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tessel/api/labels.hpp"
#include "tessel/scheduler/pg_conn.hpp"

namespace tessel::scheduler {
namespace {

// "LO-HI", two ports with 1 <= LO <= HI <= 65535, nothing else.
bool parse_port_range(const std::string& s, int& lo, int& hi) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, lo);
  if (ec != std::errc() || p == end || *p != '-') return false;
  auto [q, ec2] = std::from_chars(p + 1, end, hi);
  return ec2 == std::errc() && q == end && lo >= 1 && hi <= 65535 && lo <= hi;
}

// Splits "HOST:PORT" (IPv6 as "[::1]:PORT").
bool split_listen(const std::string& s, std::string& host, int& port) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  try {
    size_t used = 0;
    port = std::stoi(s.substr(colon + 1), &used);
    return used == s.size() - colon - 1 && port >= 0 && port <= 65535;
  } catch (...) {
    return false;
  }
}

// "7d", "12h", "90m", "3600s" or "3600" (seconds) -> milliseconds; nullopt when
// malformed or not positive.
std::optional<int64_t> parse_half_life(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "d")
    scale = 86400;
  else if (unit == "h")
    scale = 3600;
  else if (unit == "m")
    scale = 60;
  else if (!unit.empty() && unit != "s")
    return std::nullopt;
  const double ms = v * scale * 1000;
  if (!(ms >= 1000) || ms > 1e13) return std::nullopt;  // 1 s .. ~300 years.
  return static_cast<int64_t>(ms);
}

// Per-tenant limits (tenant_limits.hpp) and per-user stream caps: what one user can
// make the scheduler hold.
void add_tenant_limit_options(CLI::App& app, ServiceOptions& opts) {
  auto& limits = opts.state.limits;
  app.add_option("--max-active-jobs", limits.max_active_jobs,
                 "jobs not yet ended, all users together; past it submissions get 429 (default 500000; 0: no limit)")
      ->check(CLI::Range(int64_t{0}, int64_t{100'000'000}));
  app.add_option("--max-active-jobs-per-user", limits.max_active_jobs_per_user,
                 "jobs not yet ended per user, array elements each counted; past it 429 (default 50000; 0: no "
                 "limit); a project's max_active_jobs_per_user may set a lower one")
      ->check(CLI::Range(int64_t{0}, int64_t{100'000'000}));
  app.add_option("--max-array-size", limits.max_array_size,
                 "array elements in one submission; past it 403 (default and most 10000)")
      ->check(CLI::Range(1, tessel::api::kMaxArrayCount));
  app.add_option("--max-event-streams-per-user", opts.events.max_clients_per_user,
                 "console event streams one user may hold at once; past it 429 (default 8; 0: no cap)")
      ->check(CLI::Range(size_t{0}, size_t{100'000}));
  app.add_option("--max-follow-streams-per-user", opts.max_follow_streams_per_user,
                 "followed log streams (logs?follow=true) one user may hold at once; past it 429 (default 32; 0: "
                 "no cap)")
      ->check(CLI::Range(size_t{0}, size_t{100'000}));
}

// CPUs and memory per node for jobs that do not ask for them.
void add_task_default_options(CLI::App& app, ServiceOptions& opts) {
  auto& d = opts.state.task_defaults;
  app.add_option("--default-cpus-per-card", d.cpus_per_card,
                 "CPUs per card asked for a job that does not ask CPUs (default 0: the node's share, node CPUs x "
                 "cards asked / node cards)")
      ->check(CLI::Range(0, tessel::api::kMaxTaskCpus));
  app.add_option("--default-memory-mib-per-card", d.memory_mib_per_card,
                 "memory (MiB) per card asked for a job that does not ask memory (default 0: the node's share)")
      ->check(CLI::Range(int64_t{0}, tessel::api::kMaxTaskMemoryMib));
  app.add_option("--default-cpus-without-cards", d.cpus_without_cards,
                 "CPUs for a job asking no cards and no CPUs (default 1)")
      ->check(CLI::Range(1, tessel::api::kMaxTaskCpus));
  app.add_option("--default-memory-mib-without-cards", d.memory_mib_without_cards,
                 "memory (MiB) for a job asking no cards and no memory (default 1024)")
      ->check(CLI::Range(int64_t{1}, tessel::api::kMaxTaskMemoryMib));
}

// Where to listen, who may call, and how long a node may stay silent.
void add_core_options(CLI::App& app, SchedulerFlags& f) {
  app.add_option("--listen", f.listen, "HOST:PORT to serve on (port 0: any; prints the bound address)");
  app.add_option("--db", f.db_path,
                 "SQLite database path, or a postgresql:// URI (postgresql://USER:PASSWORD@HOST:PORT/DBNAME)");
  app.add_option("--tokens", f.tokens_path, "tokens file: TOKEN ROLE NAME per line");
  app.add_option("--heartbeat-timeout", f.heartbeat_timeout_s, "seconds without heartbeat before a node is down")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--fairshare-half-life", f.fairshare_half_life,
                 "fair share: a card-second used this long ago counts half (e.g. 7d, 12h, 3600s; default 7d)");
  app.add_option("--preempt-min-runtime", f.preempt_min_runtime_s,
                 "preemption: seconds a job runs before it may be preempted (default 60)")
      ->check(CLI::Range(0.0, 366.0 * 24 * 3600));
  app.add_option("--preempt-warning-max", f.preempt_warning_max_s,
                 "preemption: seconds at most between a victim's warning signal and its stop (default 60)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--topology-key", f.topology_key,
                 "topology-aware gangs: node label keys naming network levels, narrowest first (e.g. rack, or "
                 "leaf,spine); a gang then prefers one block of nodes sharing a value (default: none)");
  app.add_flag("--insecure", f.insecure, "allow a non-loopback address without tokens");
  app.add_option("--master-port-range", f.port_range, "LO-HI ports for MASTER_PORT");
}

// The HTTP server: a few I/O threads serve every connection (a parked long poll or log
// stream costs none); the limits keep it serving under abuse. Returns
// --http-max-connections, whose count() says whether it was given.
CLI::Option* add_http_options(CLI::App& app, SchedulerFlags& f) {
  auto& lim = f.opts.limits;
  // Each agent holds two (its long poll and its heartbeats): room for 100,000 agents.
  lim.max_connections = 262'144;
  app.add_option("--http-threads", f.opts.io_threads, "HTTP I/O threads (default 0: one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--http-head-timeout", f.head_timeout_s, "seconds to read a request head once it starts (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-body-timeout", f.body_timeout_s, "seconds to read a request body (default 30)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-idle-timeout", f.idle_timeout_s, "seconds a keep-alive connection may idle (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--http-max-head-bytes", lim.max_head_bytes, "largest request head; past it 431 (default 16384)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  app.add_option("--http-max-body-bytes", lim.max_body_bytes, "largest request body; past it 413 (default 1048576)")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20));
  auto* max_conns =
      app.add_option(
             "--http-max-connections", lim.max_connections,
             "open connections at most; past it a 503 at once (default 262144, or the open file limit less 256)")
          ->check(CLI::Range(size_t{1}, size_t{1} << 22));
  app.add_option("--http-max-requests-per-connection", lim.max_requests_per_connection,
                 "then the connection is closed (default 10000)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  return max_conns;
}

// Replicas on PostgreSQL: --advertise turns on leader election; the others need it.
void add_replica_options(CLI::App& app, SchedulerFlags& f) {
  auto* advertise_opt = app.add_option("--advertise", f.advertise,
                                       "replicas on a PostgreSQL --db: this scheduler's URL (http://HOST:PORT) that "
                                       "followers redirect clients to; turns on leader election");
  app.add_option("--lease", f.lease_s, "replicas: seconds a leader lease lasts without renewal (default 3)")
      ->check(CLI::Range(0.2, 600.0))
      ->needs(advertise_opt);
  app.add_option("--lease-renew", f.renew_s, "replicas: seconds between lease renewals and tries (default 1)")
      ->check(CLI::Range(0.05, 300.0))
      ->needs(advertise_opt);
  app.add_option("--follower-max-age", f.follower_max_age_s,
                 "replicas: a follower answers reads (jobs, nodes, inventory) from a view of the database at most "
                 "this many seconds old (default 0.5)")
      ->check(CLI::Range(0.0, 3600.0))
      ->needs(advertise_opt);
}

// Periodic backups while running: --backup-dir turns them on; the others need it.
void add_backup_options(CLI::App& app, SchedulerFlags& f) {
  auto* backup_dir_opt =
      app.add_option("--backup-dir", f.backup_dir, "back the database up into DIR while running (default: off)");
  app.add_option("--backup-every", f.backup_every, "time between backups: 90s, 15m, 1h (default), 1d")
      ->needs(backup_dir_opt);
  app.add_option("--backup-keep", f.backup_keep, "backups kept in --backup-dir, older ones deleted (default 24)")
      ->check(CLI::Range(1, 100000))
      ->needs(backup_dir_opt);
}

// "leaf,spine": label keys, each once; "" none.
tessel::Result<std::vector<std::string>> parse_topology_keys(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t pos = 0;
  for (;;) {
    const size_t comma = text.find(',', pos);
    std::string key = text.substr(pos, comma == std::string::npos ? comma : comma - pos);
    if (std::string why = tessel::api::label_key_error(key); !why.empty())
      return tessel::Error(std::string("'").append(key).append("' is not a label key: ").append(why));
    if (std::find(out.begin(), out.end(), key) != out.end())
      return tessel::Error(std::string("'").append(key).append("' is named twice"));
    out.push_back(std::move(key));
    if (comma == std::string::npos) return out;
    pos = comma + 1;
  }
}

std::chrono::milliseconds seconds_to_ms(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

}  // namespace

std::optional<int> parse_flags(int argc, char** argv, SchedulerFlags& f) {
  CLI::App app{"tessel-scheduler: the Tessel cluster scheduler"};
  add_core_options(app, f);
  auto* max_conns = add_http_options(app, f);
  app.add_option("--max-long-polls", f.opts.state.max_long_polls,
                 "agent long polls held at once, past it agents poll every 2 s (default 0: no limit)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--history-days", f.opts.state.history_days,
                 "ended jobs are pruned this many days after they finished, their usage kept (default 90; 0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{365'000}));
  add_tenant_limit_options(app, f.opts);
  add_task_default_options(app, f.opts);
  add_replica_options(app, f);
  app.add_option("--max-event-streams", f.opts.events.max_clients,
                 "console event streams (GET /v1/events) open at once; past it 503 (default 64)")
      ->check(CLI::Range(size_t{1}, size_t{100'000}));
  app.add_option("--sync", f.sync,
                 "full: a 201 means fsynced to disk (default); normal: survives a process crash, not a "
                 "power loss")
      ->check(CLI::IsMember({"full", "normal"}));
  app.add_option("--log-level", f.log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  add_backup_options(app, f);
  // Subcommands; without one, the scheduler runs with the flags above.
  auto* backup_cmd =
      app.add_subcommand("backup", "copy the database consistently, also while a scheduler runs on it; exit 0 or 1");
  backup_cmd->add_option("--db", f.db_path, "SQLite database path (default ./tessel-scheduler.db)");
  backup_cmd->add_option("--to", f.backup_to, "path of the copy")->required();
  backup_cmd->add_flag("--force", f.backup_force, "replace an existing --to");
  auto* check_cmd =
      app.add_subcommand("check", "check a database or a backup: prints ok or its problems; exit 0 when ok, else 1");
  check_cmd->add_option("--db", f.db_path, "SQLite database path (default ./tessel-scheduler.db)");
  check_cmd->add_flag("--quick", f.check_quick, "PRAGMA quick_check instead of the full integrity_check");
  app.require_subcommand(0, 1);
  CLI11_PARSE(app, argc, argv);
  if (backup_cmd->parsed()) f.command = SchedulerFlags::Command::backup;
  if (check_cmd->parsed()) f.command = SchedulerFlags::Command::check;
  f.max_connections_given = max_conns->count() > 0;
  return std::nullopt;
}

tessel::Status settle_flags(SchedulerFlags& f, ReplicaOptions& replica) {
  auto& opts = f.opts;
  if (!split_listen(f.listen, opts.host, opts.port))
    return tessel::Error("--listen: expected HOST:PORT, got '" + f.listen + "'");
  opts.limits.head_timeout = seconds_to_ms(f.head_timeout_s);
  opts.limits.body_timeout = seconds_to_ms(f.body_timeout_s);
  opts.limits.idle_timeout = seconds_to_ms(f.idle_timeout_s);
  opts.state.heartbeat_timeout_ms = static_cast<int64_t>(f.heartbeat_timeout_s * 1000);
  opts.state.preempt_min_runtime_ms = static_cast<int64_t>(f.preempt_min_runtime_s * 1000);
  opts.state.preempt_warning_max_ms = static_cast<int64_t>(f.preempt_warning_max_s * 1000);
  if (auto hl = parse_half_life(f.fairshare_half_life))
    opts.state.fairshare_half_life_ms = *hl;
  else
    return tessel::Error("--fairshare-half-life: expected a duration such as 7d, 12h or 3600s, got '" +
                         f.fairshare_half_life + "'");
  if (auto levels = parse_topology_keys(f.topology_key))
    opts.state.topology_levels = std::move(*levels);
  else
    return tessel::Error("--topology-key: " + levels.error().message);
  if (!parse_port_range(f.port_range, opts.state.master_port_lo, opts.state.master_port_hi))
    return tessel::Error("--master-port-range: expected LO-HI within 1-65535, got '" + f.port_range + "'");
  replica.lease = seconds_to_ms(f.lease_s);
  replica.renew = seconds_to_ms(f.renew_s);
  replica.read_max_age = seconds_to_ms(f.follower_max_age_s);
  if (!f.advertise.empty()) {
    if (!is_postgres_uri(f.db_path))
      return tessel::Error("--advertise: replicas need a PostgreSQL --db (postgresql://...)");
    if (f.advertise.rfind("http://", 0) != 0 && f.advertise.rfind("https://", 0) != 0)
      return tessel::Error("--advertise: expected a URL (http://HOST:PORT), got '" + f.advertise + "'");
    if (replica.renew * 2 > replica.lease)
      return tessel::Error(
          "--lease-renew: must be at most half of --lease, so one lost renewal does not lose the lease");
  }
  return tessel::ok_status();
}

}  // namespace tessel::scheduler
