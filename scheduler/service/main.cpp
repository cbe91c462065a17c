// tessel-scheduler: the central service (see scheduler/service/tessel/scheduler/service.hpp),
// plus `backup` and `check` of its database.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include <systemd/sd-daemon.h>

#include "tessel/log/logging.hpp"
#include "tessel/scheduler/backup.hpp"
#include "tessel/base/random.hpp"
#include "tessel/http/fd_limit.hpp"
#include "tessel/scheduler/pg_conn.hpp"
#include "tessel/scheduler/pg_lease.hpp"
#include "tessel/scheduler/replica.hpp"
#include "tessel/scheduler/scheduler_flags.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/systemd_notifier.hpp"

using namespace tessel::scheduler;

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

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
