// tessel-scheduler: the central service (see scheduler/service/tessel/scheduler/service.hpp),
// plus `backup` and `check` of its database.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <systemd/sd-daemon.h>

#include "tessel/api/labels.hpp"
#include "tessel/log/logging.hpp"
#include "tessel/scheduler/backup.hpp"
#include "tessel/base/random.hpp"
#include "tessel/http/fd_limit.hpp"
#include "tessel/scheduler/pg_conn.hpp"
#include "tessel/scheduler/pg_lease.hpp"
#include "tessel/scheduler/replica.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/systemd_notifier.hpp"

using namespace tessel::scheduler;

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

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

// What a signal or a lost lease stops: set() names it (the follower's wait, then the
// service); fire() calls it now, or as soon as one is set.
class StopHook {
 public:
  void set(std::function<void()> f) {
    tessel::MutexLock lk(mu_);
    f_ = std::move(f);
    if (fired_ && f_) f_();
  }
  void fire() {
    tessel::MutexLock lk(mu_);
    fired_ = true;
    if (f_) f_();
  }

 private:
  tessel::Mutex mu_;
  std::function<void()> f_ GUARDED_BY(mu_);
  bool fired_ GUARDED_BY(mu_) = false;
};

// This process among the replicas: host name, pid and a random suffix.
tessel::Result<std::string> lease_holder() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  auto suffix = tessel::random_hex(4);
  if (!suffix) return suffix.error().wrap("naming this replica");
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + *suffix;
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "tessel-scheduler: %s\n", msg.c_str());
  return 2;
}

// tessel-scheduler backup --db DB --to TO [--force]: exit 0 when the copy is made and checked, else 1.
int run_backup(const std::string& db, const std::string& to, bool force) {
  BackupOptions o;
  o.force = force;
  auto r = backup_database(db, to, o);
  if (!r) {
    std::fprintf(stderr, "tessel-scheduler: backup: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("backed up %s to %s (%lld bytes, quick_check ok)\n", db.c_str(), to.c_str(),
              static_cast<long long>(r->bytes));
  return 0;
}

// tessel-scheduler check --db DB [--quick]: prints "DB: ok" (exit 0) or each problem (exit 1).
int run_check(const std::string& db, bool quick) {
  const CheckDepth depth = quick ? CheckDepth::quick : CheckDepth::full;
  auto problems = check_database(db, depth);
  if (!problems) {
    std::fprintf(stderr, "tessel-scheduler: check: %s\n", problems.error().message.c_str());
    return 1;
  }
  if (problems->empty()) {
    std::printf("%s: ok (%s)\n", db.c_str(), to_string(depth));
    return 0;
  }
  for (const auto& p : *problems) std::printf("%s: %s\n", db.c_str(), p.c_str());
  std::printf("%s: corrupt (%s found %zu problem%s)\n", db.c_str(), to_string(depth), problems->size(),
              problems->size() == 1 ? "" : "s");
  return 1;
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

// The command line as given: parse_flags() fills it, settle_flags() checks it and
// turns the rest into `opts` and the replica options.
struct SchedulerFlags {
  enum class Command { serve, backup, check };
  Command command = Command::serve;
  std::string listen = "127.0.0.1:7450", db_path = "./tessel-scheduler.db", tokens_path, port_range = "29500-29999",
              log_level = "info";
  double heartbeat_timeout_s = 15;
  std::string fairshare_half_life = "7d";
  std::string topology_key;  // --topology-key: label keys, narrowest first, comma-separated.

  double preempt_min_runtime_s = 60, preempt_warning_max_s = 60;
  bool insecure = false;
  double head_timeout_s = 10, body_timeout_s = 30, idle_timeout_s = 60;
  bool max_connections_given = false;  // --http-max-connections was on the command line.
  // Replicas on PostgreSQL (off unless --advertise is given).
  std::string advertise;
  double lease_s = 3, renew_s = 1, follower_max_age_s = 0.5;
  std::string sync = "full";
  // Periodic backups while running (off unless --backup-dir is given).
  std::string backup_dir, backup_every = "1h";
  int backup_keep = 24;
  // The backup and check subcommands.
  std::string backup_to;
  bool backup_force = false, check_quick = false;
  ServiceOptions opts;
};

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

// Reads the command line into `f`. Returns the exit code when the process ends here
// (--help, a bad flag), else nullopt.
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

// Checks the flags the service runs with and turns them into f.opts and `replica`;
// the error names the flag at fault.
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

// The periodic backups --backup-dir asks for (null without it); adds their metrics to
// f.opts and leaves f.backup_every in seconds for the log.
tessel::Result<std::unique_ptr<PeriodicBackup>> make_backups(SchedulerFlags& f) {
  if (f.backup_dir.empty()) return std::unique_ptr<PeriodicBackup>();
  if (f.db_path == ":memory:" || f.db_path.rfind("file:", 0) == 0 || is_postgres_uri(f.db_path))
    return tessel::Error("--backup-dir: needs a database file, not " + redact_db(f.db_path));
  auto every = parse_duration(f.backup_every);
  if (!every) return every.error().wrap("--backup-every");
  auto backups =
      std::make_unique<PeriodicBackup>(PeriodicBackupOptions{f.db_path, f.backup_dir, *every, f.backup_keep});
  f.backup_every = std::to_string(every->count()) + " s";
  f.opts.extra_metrics = [b = backups.get()] { return b->metrics(); };
  return backups;
}

// The tokens file --tokens names (nullopt without it); refuses a non-loopback address
// without one unless --insecure.
tessel::Result<std::optional<TokenTable>> load_tokens(const SchedulerFlags& f) {
  std::optional<TokenTable> tokens;
  if (!f.tokens_path.empty()) {
    auto t = load_tokens_file(f.tokens_path);
    if (!t) return t.error().wrap("--tokens");
    for (const auto& w : tokens_file_warnings(f.tokens_path, *t)) spdlog::warn("--tokens: {}", w);
    tokens = std::move(*t);
  }
  if (!tokens && !f.insecure && !is_loopback(f.opts.host))
    return tessel::Error("refusing to listen on non-loopback " + f.opts.host +
                         " without --tokens (use --insecure to override)");
  return tokens;
}

// Blocks SIGTERM and SIGINT in every thread and starts a detached thread that waits
// for one and fires `stop_hook`; ignores SIGPIPE.
void watch_signals(StopHook& stop_hook) {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // `sigs` by value: main may return (a refused start) while this detached thread waits.
  std::thread signals([sigs, &stop_hook] {
    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("signal {}: shutting down", sig);
    stop_hook.fire();
  });
  signals.detach();
}

// Opens the leader lease in the PostgreSQL database as this replica.
tessel::Result<std::unique_ptr<PgLease>> open_lease(const SchedulerFlags& f, const ReplicaOptions& replica,
                                                    std::string& holder) {
  auto h = lease_holder();
  if (!h) return h.error();
  holder = *h;
  return PgLease::open(f.db_path, LeaseOptions{holder, f.advertise, replica.lease});
}

// Serves as a follower (redirects, and reads from a view of the database) until this
// replica holds the leader lease. Returns the leader epoch, or 0 when stopped first;
// then sets f.opts up for a leader.
tessel::Result<int64_t> follow_until_leading(SchedulerFlags& f, const ReplicaOptions& replica,
                                             const std::optional<TokenTable>& tokens, PgLease& lease,
                                             const std::string& holder, StopHook& stop_hook) {
  auto& opts = f.opts;
  // A follower answers reads from the database on a connection of its own, which
  // takes no lock (it goes when this replica leads).
  PgStoreOptions reader_opts;
  reader_opts.read_only = true;
  auto reader = open_pg_store(f.db_path, reader_opts);
  if (!reader) return reader.error();
  FollowerReads reads(**reader, tessel::system_clock(), tokens, replica.read_max_age);
  Follower follower(lease, replica, &reads);
  tessel::http::ServerOptions so;
  so.host = opts.host;
  so.port = opts.port;
  so.io_threads = 1;
  so.limits = opts.limits;
  if (auto s = follower.start(so); !s) return s.error();
  opts.port = follower.port();  // The leader serves on the same port.
  std::printf("listening on %s:%d\n", opts.host.c_str(), opts.port);
  std::fflush(stdout);
  spdlog::info("follower on {}:{} as {} (advertising {}): waiting for the leader lease", opts.host, opts.port, holder,
               f.advertise);
  stop_hook.set([&follower] { follower.stop(); });
  // Under systemd (Type=notify, a watchdog) a follower is up and well while it waits.
  const int64_t epoch = follower.lead([](const LeaseView& v) {
    const std::string msg = "READY=1\nWATCHDOG=1\nSTATUS=follower; leader " +
                            (v.advertise.empty() ? std::string("unknown") : v.advertise) + ", epoch " +
                            std::to_string(v.epoch);
    sd_notify(0, msg.c_str());
  });
  stop_hook.set(nullptr);
  if (epoch == 0) return epoch;
  spdlog::info("leading with epoch {}", epoch);
  opts.epoch = epoch;
  opts.extra_health = [epoch](nlohmann::json& j) {
    j["role"] = "leader";
    j["epoch"] = epoch;
  };
  opts.extra_metrics = [more = opts.extra_metrics, epoch, changes = follower.leader_changes()] {
    return render_replica_metrics(true, epoch, changes) + (more ? more() : "");
  };
  return epoch;
}

// What the service runs with once the flags are settled.
struct Startup {
  ReplicaOptions replica;
  std::unique_ptr<PeriodicBackup> backups;  // Null without --backup-dir.
  std::optional<TokenTable> tokens;         // nullopt without --tokens.
  std::unique_ptr<PgLease> lease;           // Null without --advertise.
  int64_t epoch = 0;                        // The leader epoch with a lease.
};

// Runs the service (the leader, with a lease) until a signal or a lost lease stops it.
// Returns the exit code: 3 after stepping down, else 0 (or 2 when it cannot start).
int run_service(SchedulerFlags& f, Startup& up, StopHook& stop_hook) {
  std::atomic<bool> stepped_down{false};
  auto step_down = [&](const std::string& why) {
    spdlog::error("leader lease lost: {}; stepping down", why);
    stepped_down = true;
    stop_hook.fire();
  };
  PgStoreOptions pg_opts;
  pg_opts.leader_epoch = up.epoch;
  pg_opts.on_fenced = [&](int64_t now) { step_down("a write found epoch " + std::to_string(now)); };
  auto store = is_postgres_uri(f.db_path) ? open_pg_store(f.db_path, pg_opts)
                                          : open_store(f.db_path, f.sync == "full" ? SyncMode::full : SyncMode::normal);
  if (!store) return fail(store.error().message);
  Service service(**store, tessel::system_clock(), std::move(up.tokens), f.opts);
  if (auto s = service.start(); !s) return fail(s.error().message);
  stop_hook.set([&service] { service.request_stop(); });
  std::unique_ptr<LeaseKeeper> keeper;
  if (up.lease)
    keeper = std::make_unique<LeaseKeeper>(*up.lease, up.epoch, up.replica, tessel::system_clock(), step_down);
  if (up.backups) {
    if (auto s = up.backups->start(); !s) return fail(s.error().message);
    spdlog::info("backing up {} into {} every {}, keeping {}", f.db_path, f.backup_dir, f.backup_every, f.backup_keep);
  }
  if (!up.lease) {
    std::printf("listening on %s:%d\n", f.opts.host.c_str(), service.port());
    std::fflush(stdout);
  }
  spdlog::info("listening on {}:{} (db {}, auth {})", f.opts.host, service.port(), redact_db(f.db_path),
               f.tokens_path.empty() ? "off" : "on");

  SystemdNotifier notifier(service.state());
  notifier.start();
  service.wait();
  keeper.reset();
  if (up.backups) up.backups->stop();
  notifier.stop();
  service.stop();
  if (stepped_down) return 3;  // The service manager starts it again, as a follower.
  if (up.lease) {
    // A clean stop hands over at once: followers need not wait for the lease to expire.
    if (auto s = up.lease->release(up.epoch); !s) spdlog::warn("{}", s.error().message);
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  SchedulerFlags f;
  if (auto code = parse_flags(argc, argv, f)) return *code;
  using Command = SchedulerFlags::Command;
  if (f.command != Command::serve && is_postgres_uri(f.db_path))
    return fail(std::string(f.command == Command::backup ? "backup" : "check") +
                ": --db is a PostgreSQL database; back it up and check it with PostgreSQL's own tools (pg_dump, "
                "pg_basebackup, amcheck)");
  if (f.command == Command::backup) return run_backup(f.db_path, f.backup_to, f.backup_force);
  if (f.command == Command::check) return run_check(f.db_path, f.check_quick);

  if (auto s = tessel::init_logging("tessel-scheduler", f.log_level); !s) return fail(s.error().message);
  Startup up;
  if (auto s = settle_flags(f, up.replica); !s) return fail(s.error().message);
  auto backups = make_backups(f);
  if (!backups) return fail(backups.error().message);
  up.backups = std::move(*backups);
  auto tokens = load_tokens(f);
  if (!tokens) return fail(tokens.error().message);
  up.tokens = std::move(*tokens);

  // What a signal (or stepping down) stops: the follower's wait, then the service.
  StopHook stop_hook;
  watch_signals(stop_hook);
  // Every agent keeps a connection open (its long poll) and heartbeats open more: raise
  // the open-file limit and keep the cap below it (one descriptor a connection).
  auto& lim = f.opts.limits;
  lim.max_connections = tessel::http::connection_cap(tessel::http::raise_fd_limit(), lim.max_connections, 1,
                                                     f.max_connections_given, "--http-max-connections");
  // Replicas: wait as a follower until this one holds the leader lease.
  if (!f.advertise.empty()) {
    std::string holder;
    auto lease = open_lease(f, up.replica, holder);
    if (!lease) return fail(lease.error().message);
    up.lease = std::move(*lease);
    auto epoch = follow_until_leading(f, up.replica, up.tokens, *up.lease, holder, stop_hook);
    if (!epoch) return fail(epoch.error().message);
    if (*epoch == 0) {
      spdlog::info("stopped");
      return 0;
    }
    up.epoch = *epoch;
  }
  return run_service(f, up, stop_hook);
}
