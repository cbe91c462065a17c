// PgStore: the Store on PostgreSQL with group commit, as SqliteStore (GroupCommitter):
// each group of queued batches is one transaction, acknowledged with the outcome of
// its COMMIT (synchronous_commit on: the WAL is flushed when it returns).
// A lost connection fails the writes in flight (503 to their clients) and is made
// again, by the writer thread, on the next write; nothing is retried behind the
// caller's back, because a COMMIT cut off midway has an unknown outcome.
// One scheduler per database, as with SQLite's lock file: every connection the store
// writes on first takes a session-level advisory lock, so no two schedulers ever
// commit to one database (a second one is refused at start; one whose connection was
// lost while another took over can no longer write).
#include <algorithm>
#include <chrono>
#include <map>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tessel/scheduler/group_commit.hpp"
#include "tessel/scheduler/pg_conn.hpp"
#include "tessel/scheduler/pg_lease.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

namespace {

constexpr int64_t kMigrationLock = 0x5453534c;
// How long a write transaction may sit idle before the server ends it (commit()).
constexpr int kWriteIdleMs = 2000;              // pg_advisory_xact_lock key while migrating ("TSSL").
constexpr int64_t kSchedulerLock = 0x54535353;  // pg_try_advisory_lock key held by the scheduler ("TSSS").
// A crashed scheduler's session ends when the server sees its socket close; a new one
// waits this long for its lock before refusing to start.
constexpr int kLockAttempts = 50;
constexpr auto kLockRetry = std::chrono::milliseconds(100);

// One kind of record: a table of JSON documents (`body`, as the API writes them)
// keyed by text. A new kind is a migration creating its table, one KindTable, and
// its put/delete loops in apply() and its read in read_all().
struct KindTable {
  std::string table;
  std::string order_by = "key";
  std::string upsert() const {
    return "INSERT INTO " + table + "(key, body) VALUES($1, $2) ON CONFLICT(key) DO UPDATE SET body = excluded.body";
  }
  std::string remove() const { return "DELETE FROM " + table + " WHERE key = $1"; }
  std::string select() const { return "SELECT body FROM " + table + " ORDER BY " + order_by; }
};

const KindTable kJobs{"jobs", "seq"};  // Also has seq: written by its own statement.
const KindTable kNodes{"nodes"};
const KindTable kFences{"fences"};
const KindTable kProjects{"projects"};          // Keyed by name: loads in ascending name.
const KindTable kUsage{"usage_records"};        // Keyed by UsageRecord::key(); never deleted.
const KindTable kNodeTokens{"node_tokens"};     // Keyed by node name.
const KindTable kReservations{"reservations"};  // Keyed by name (schema version 7).

// Versioned schema migrations: entry i upgrades version i to i+1; the version is the
// one row of schema_version. Never edit a shipped migration: append a new one.
// Migration 5 -> 6, for followers' incremental loads (load_changed_locked): a
// trigger stamps every row written with the next value of one sequence (`changed`),
// whoever writes it, and every DELETE statement counts in row_deletes, by table.
std::string incremental_load_migration() {
  std::string sql =
      "CREATE SEQUENCE row_change;"
      "CREATE TABLE row_deletes (tbl TEXT PRIMARY KEY, n BIGINT NOT NULL);"
      "CREATE FUNCTION tessel_row_changed() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN NEW.changed := nextval('row_change'); RETURN NEW; END $$;"
      "CREATE FUNCTION tessel_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN UPDATE row_deletes SET n = n + 1 WHERE tbl = TG_TABLE_NAME; RETURN NULL; END $$;";
  // Per table, `@` standing for its name.
  const std::string per_table =
      "INSERT INTO row_deletes VALUES ('@', 0);"
      "ALTER TABLE @ ADD COLUMN changed BIGINT NOT NULL DEFAULT 0;"
      "CREATE INDEX @_changed ON @ (changed);"
      "CREATE TRIGGER @_changed BEFORE INSERT OR UPDATE ON @ FOR EACH ROW EXECUTE FUNCTION tessel_row_changed();"
      "CREATE TRIGGER @_deleted AFTER DELETE ON @ FOR EACH STATEMENT EXECUTE FUNCTION tessel_rows_deleted();";
  for (const char* table : {"jobs", "nodes", "fences", "projects", "usage_records", "node_tokens"})
    for (char c : per_table) {
      if (c == '@')
        sql += table;
      else
        sql += c;
    }
  return sql;
}

const std::vector<std::string>& pg_migrations() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> v = {
        // 0 -> 1: jobs (body = api::to_json(Job), dependencies included), nodes and fences.
        // One migration of three statements, concatenated on purpose:
        // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
        "CREATE TABLE jobs (seq BIGINT PRIMARY KEY, key TEXT NOT NULL UNIQUE, body TEXT NOT NULL);"
        "CREATE TABLE nodes (key TEXT PRIMARY KEY, body TEXT NOT NULL);"
        "CREATE TABLE fences (key TEXT PRIMARY KEY, body TEXT NOT NULL);",
        // 1 -> 2: the leader lease of scheduler replicas (pg_lease.hpp); no row until one
        // is first taken.
        "CREATE TABLE leader (one INT PRIMARY KEY CHECK (one = 1), holder TEXT NOT NULL, advertise TEXT NOT NULL, "
        "epoch BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL);",
        // 2 -> 3: projects (body = project_to_json(Project)).
        "CREATE TABLE projects (key TEXT PRIMARY KEY, body TEXT NOT NULL);",
        // 3 -> 4: accounting, one usage record per ended job attempt (body =
        // usage_record_to_json), kept when the job is pruned.
        "CREATE TABLE usage_records (key TEXT PRIMARY KEY, body TEXT NOT NULL);",
        // 4 -> 5: admin-issued agent tokens, one per node, only their SHA-256 (body =
        // node_token_to_json).
        "CREATE TABLE node_tokens (key TEXT PRIMARY KEY, body TEXT NOT NULL);",
    };
    // 5 -> 6: `changed` on every table and row_deletes (incremental_load_migration).
    v.push_back(incremental_load_migration());
    // 6 -> 7: reservations (issue 32; body = reservation_to_json), with `changed` and
    // its triggers as every table of version 6.
    v.push_back(
        "CREATE TABLE reservations (key TEXT PRIMARY KEY, body TEXT NOT NULL, changed BIGINT NOT NULL DEFAULT 0);"
        "INSERT INTO row_deletes VALUES ('reservations', 0);"
        "CREATE INDEX reservations_changed ON reservations (changed);"
        "CREATE TRIGGER reservations_changed BEFORE INSERT OR UPDATE ON reservations FOR EACH ROW "
        "EXECUTE FUNCTION tessel_row_changed();"
        "CREATE TRIGGER reservations_deleted AFTER DELETE ON reservations FOR EACH STATEMENT "
        "EXECUTE FUNCTION tessel_rows_deleted();");
    return v;
  }();
  return m;
}

}  // namespace

// Brings the schema to the newest version in one transaction, under an advisory lock
// so that replicas starting together migrate once.
Status pg_migrate(PgConn& c) {
  if (auto s = c.exec("BEGIN"); !s) return s.error().wrap("begin");
  auto fail = [&](const Error& e) -> Status {
    (void)c.exec("ROLLBACK");
    return e;
  };
  if (auto r = c.query("SELECT pg_advisory_xact_lock($1)", {std::to_string(kMigrationLock)}); !r)
    return fail(r.error().wrap("taking the migration lock"));
  if (auto s = c.exec(
          "CREATE TABLE IF NOT EXISTS schema_version (one INT PRIMARY KEY CHECK (one = 1), version INT NOT NULL);"
          "INSERT INTO schema_version VALUES (1, 0) ON CONFLICT DO NOTHING");
      !s)
    return fail(s.error().wrap("creating schema_version"));
  auto v = c.query("SELECT version FROM schema_version");
  if (!v) return fail(v.error().wrap("reading schema_version"));
  if (v->size() != 1) return fail(Error::conflict("schema_version has " + std::to_string(v->size()) + " rows, not 1"));
  const int64_t version = std::stoll(v->text(0, 0));
  const auto& m = pg_migrations();
  if (version > static_cast<int64_t>(m.size()))
    return fail(Error::conflict("database schema version " + std::to_string(version) + " is newer than this binary (" +
                                std::to_string(m.size()) + ")"));
  for (auto i = version; i < static_cast<int64_t>(m.size()); ++i) {
    if (auto s = c.exec(m[i]); !s) return fail(s.error().wrap("migration " + std::to_string(i + 1)));
    if (auto r = c.query("UPDATE schema_version SET version = $1", {std::to_string(i + 1)}); !r)
      return fail(r.error().wrap("migration " + std::to_string(i + 1)));
  }
  if (auto s = c.exec("COMMIT"); !s) return fail(s.error().wrap("commit"));
  return ok_status();
}

namespace {

// Takes the scheduler's lock on `c`'s session, waiting up to kLockAttempts tries.
Status lock_database(PgConn& c, const std::string& uri) {
  for (int attempt = 0;; ++attempt) {
    auto r = c.query("SELECT pg_try_advisory_lock($1)", {std::to_string(kSchedulerLock)});
    if (!r) return r.error().wrap("locking " + redact_db(uri));
    if (r->size() == 1 && r->text(0, 0) == "t") return ok_status();
    if (attempt + 1 == kLockAttempts)
      return Error::unavailable("database " + redact_db(uri) + " is in use by another tessel-scheduler");
    std::this_thread::sleep_for(kLockRetry);
  }
}

Status put(PgConn& c, const KindTable& k, const std::string& key, const std::string& body) {
  if (auto r = c.query(k.upsert(), {key, body}); !r) return r.error().wrap("writing " + k.table + " " + key);
  return ok_status();
}

Status remove(PgConn& c, const KindTable& k, const std::string& key) {
  if (auto r = c.query(k.remove(), {key}); !r) return r.error().wrap("deleting " + k.table + " " + key);
  return ok_status();
}

// Every row of `k`, each parsed by `parse` (text -> Result<T>) into `out`.
template <class T, class Parse>
Status read_kind(PgConn& c, const KindTable& k, Parse parse, std::vector<T>& out) {
  auto rows = c.query(k.select());
  if (!rows) return rows.error().wrap("loading " + k.table);
  for (int i = 0; i < rows->size(); ++i) {
    Result<T> v = parse(rows->text(i, 0));
    if (!v) return v.error().wrap("loading " + k.table);
    out.push_back(std::move(*v));
  }
  return ok_status();
}

Result<api::Job> job_from_text(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error::conflict("jobs table: a row is not JSON");
  return api::job_from_json(j);
}

// A follower's copy of one table as of its last load, in the table's order.
template <class K, class T>
struct CachedTable {
  std::map<K, T> rows;
  int64_t watermark = -1;  // The highest `changed` read.
  int64_t deletes = -1;    // row_deletes.n at the last load; -1: never read.
  std::vector<T> values() const {
    std::vector<T> out;
    out.reserve(rows.size());
    for (const auto& [key, v] : rows) out.push_back(v);
    return out;
  }
};

// Reads into `cache` the rows of `table` written since its watermark, or every row
// when a DELETE ran on it since (`deletes` differs) or it was never read. Returns the
// number of rows read. `key_of` turns the key column's text into K.
template <class K, class T, class KeyOf, class Parse>
Result<size_t> refresh_table(PgConn& c, const std::string& table, const char* key_column, int64_t deletes,
                             CachedTable<K, T>& cache, KeyOf key_of, Parse parse) {
  if (cache.deletes != deletes) {
    cache.rows.clear();
    cache.watermark = -1;
  }
  auto rows = c.query(std::string("SELECT ") + key_column + ", changed, body FROM " + table + " WHERE changed > $1",
                      {std::to_string(cache.watermark)});
  if (!rows) return rows.error().wrap("loading " + table);
  for (int i = 0; i < rows->size(); ++i) {
    Result<T> v = parse(rows->text(i, 2));
    if (!v) return v.error().wrap("loading " + table);
    cache.rows.insert_or_assign(key_of(rows->text(i, 0)), std::move(*v));
    cache.watermark = std::max<int64_t>(cache.watermark, std::stoll(rows->text(i, 1)));
  }
  cache.deletes = deletes;
  return static_cast<size_t>(rows->size());
}

std::string key_text(const std::string& k) { return k; }
int64_t key_number(const std::string& k) { return std::stoll(k); }

class PgStore final : public Store {
 public:
  PgStore(std::string uri, PgStoreOptions opts, std::unique_ptr<PgConn> conn)
      : uri_(std::move(uri)), opts_(std::move(opts)), conn_(std::move(conn)) {}
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  Status write(const WriteBatch& batch) override { return committer_.write(batch); }
  std::future<Status> write_queued(std::shared_ptr<const WriteBatch> batch) override {
    return committer_.queue(std::move(batch));
  }

  Result<Snapshot> load() override {
    MutexLock lk(db_mu_);
    if (auto s = ensure_connected_locked(); !s) return s.error().wrap("loading");
    if (opts_.read_only) {
      auto snap = load_changed_locked();
      if (!snap) cache_ = FollowerCache{};  // The next load reads everything again.
      return snap;
    }
    // One snapshot of all tables: a REPEATABLE READ transaction sees one point in time.
    if (auto s = conn_->exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s) return drop_on(s.error());
    Snapshot snap;
    Status s = read_kind(*conn_, kJobs, job_from_text, snap.jobs);
    if (s) s = read_kind(*conn_, kNodes, node_record_from_json, snap.nodes);
    if (s) s = read_kind(*conn_, kFences, fence_from_json, snap.fences);
    if (s) s = read_kind(*conn_, kProjects, project_from_json, snap.projects);
    if (s) s = read_kind(*conn_, kUsage, usage_record_from_json, snap.usage);
    if (s) s = read_kind(*conn_, kNodeTokens, node_token_from_json, snap.node_tokens);
    if (s) s = read_kind(*conn_, kReservations, reservation_from_json, snap.reservations);
    (void)conn_->exec("ROLLBACK");
    if (!s) return drop_on(s.error());
    return snap;
  }

 private:
  // The connection, made again when it was lost (the server restarted, the network
  // failed over to a new primary).
  Status ensure_connected_locked() REQUIRES(db_mu_) {
    if (conn_ && !conn_->broken()) return ok_status();
    conn_.reset();
    auto c = PgConn::connect(uri_);
    if (!c) return Error::unavailable(c.error().message);
    if (opts_.leader_epoch == 0 && !opts_.read_only)
      if (auto s = lock_database(**c, uri_); !s) return s;
    spdlog::info("store: connected to {} again", redact_db(uri_));
    // Perhaps to another server (a promoted standby, a restored backup), whose stamps
    // need not continue those read: a follower reads every row again.
    cache_ = FollowerCache{};
    conn_ = std::move(*c);
    return ok_status();
  }

  // A follower's load: one REPEATABLE READ snapshot, in which only the rows written
  // since the previous load are read (every row of a table where a DELETE ran since),
  // merged into cache_. The store's single writer commits one transaction at a time
  // (a new leader's first write waits for the old leader's last one: pg_lease.cpp), so
  // rows committed after a snapshot always have higher `changed` than any it saw.
  Result<Snapshot> load_changed_locked() REQUIRES(db_mu_) {
    if (auto s = conn_->exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s) return drop_on(s.error());
    auto done = [&](Result<Snapshot> r) REQUIRES(db_mu_) -> Result<Snapshot> {
      (void)conn_->exec("ROLLBACK");
      if (!r) return drop_on(r.error());
      return r;
    };
    auto counts = conn_->query("SELECT tbl, n FROM row_deletes");
    if (!counts) return done(counts.error().wrap("loading row_deletes"));
    std::map<std::string, int64_t> deletes;
    for (int i = 0; i < counts->size(); ++i) deletes[counts->text(i, 0)] = std::stoll(counts->text(i, 1));
    const bool first = cache_.jobs.deletes < 0;
    size_t read = 0;
    bool full = false;
    auto refresh = [&](const char* table, const char* key_column, auto& cache, auto key_of, auto parse)
                       REQUIRES(db_mu_) -> Status {
      full = full || cache.deletes != deletes[table];
      auto n = refresh_table(*conn_, table, key_column, deletes[table], cache, key_of, parse);
      if (!n) return n.error();
      read += *n;
      return ok_status();
    };
    Status s = refresh("jobs", "seq", cache_.jobs, key_number, job_from_text);
    if (s) s = refresh("nodes", "key", cache_.nodes, key_text, node_record_from_json);
    if (s) s = refresh("fences", "key", cache_.fences, key_text, fence_from_json);
    if (s) s = refresh("projects", "key", cache_.projects, key_text, project_from_json);
    if (s) s = refresh("usage_records", "key", cache_.usage, key_text, usage_record_from_json);
    if (s) s = refresh("node_tokens", "key", cache_.node_tokens, key_text, node_token_from_json);
    if (s) s = refresh("reservations", "key", cache_.reservations, key_text, reservation_from_json);
    if (!s) return done(s.error());
    Snapshot snap;
    snap.unchanged = !first && !full && read == 0;
    if (!snap.unchanged) spdlog::debug("store: follower load read {} row(s){}", read, full ? " (a table in full)" : "");
    snap.jobs = cache_.jobs.values();
    snap.nodes = cache_.nodes.values();
    snap.fences = cache_.fences.values();
    snap.projects = cache_.projects.values();
    snap.usage = cache_.usage.values();
    snap.node_tokens = cache_.node_tokens.values();
    snap.reservations = cache_.reservations.values();
    return done(std::move(snap));
  }

  // Returns `e`, dropping the connection when it is lost (the next use makes a new one).
  Error drop_on(const Error& e) REQUIRES(db_mu_) {
    if (conn_ && conn_->broken()) {
      conn_.reset();
      return Error::unavailable("database connection lost: " + e.message);
    }
    return e;
  }

  Status commit(const std::vector<const WriteBatch*>& group) {
    if (opts_.read_only) return Error::unavailable("this store only reads (a follower's)");
    MutexLock lk(db_mu_);
    if (auto s = ensure_connected_locked(); !s) return s;
    // A write transaction never waits on its client between statements: when this
    // process is paused or cut off mid-transaction (SIGSTOP, a VM freeze), the server
    // ends it after kWriteIdleMs (pg_write_begin_sql()), and with it the lease row's
    // FOR SHARE lock that a replica taking over waits for (pg_lease.cpp). Only here: a
    // follower's load reads and parses between statements of its read transaction.
    if (auto s = conn_->exec(pg_write_begin_sql()); !s) return drop_on(s.error().wrap("begin"));
    if (Status s = check_epoch_locked(); !s) {
      (void)conn_->exec("ROLLBACK");
      return drop_on(s.error());
    }
    if (Status s = apply_all(group); !s) {
      (void)conn_->exec("ROLLBACK");
      return drop_on(s.error());
    }
    if (auto c = conn_->exec("COMMIT"); !c) return drop_on(c.error().wrap("commit"));
    return ok_status();
  }

  // With replicas: the lease still has this scheduler's epoch. FOR SHARE holds the row
  // until COMMIT, so a replica taking over waits for this transaction to end.
  Status check_epoch_locked() REQUIRES(db_mu_) {
    if (opts_.leader_epoch == 0) return ok_status();
    auto r = conn_->query("SELECT epoch FROM leader WHERE one = 1 FOR SHARE");
    if (!r) return r.error().wrap("checking the leader epoch");
    const int64_t now = r->size() == 1 ? std::stoll(r->text(0, 0)) : 0;
    if (now == opts_.leader_epoch) return ok_status();
    if (!fenced_) {
      fenced_ = true;
      if (opts_.on_fenced) opts_.on_fenced(now);
    }
    return Error::unavailable("not the leader any more (lease epoch " + std::to_string(now) + ", this scheduler's " +
                              std::to_string(opts_.leader_epoch) + ")");
  }

  Status apply_all(const std::vector<const WriteBatch*>& group) REQUIRES(db_mu_) {
    PgConn& c = *conn_;
    for (const WriteBatch* batch : group) {
      const WriteBatch& b = *batch;
      for (const auto& j : b.jobs) {
        auto r = c.query(
            "INSERT INTO jobs(seq, key, body) VALUES($1, $2, $3) ON CONFLICT(seq) DO UPDATE SET body = excluded.body",
            {std::to_string(job_seq(j.id)), j.id, api::to_json(j).dump()});
        if (!r) return r.error().wrap("writing job " + j.id);
      }
      for (const auto& id : b.delete_jobs)
        if (auto r = c.query("DELETE FROM jobs WHERE seq = $1", {std::to_string(job_seq(id))}); !r)
          return r.error().wrap("deleting job " + id);
      for (const auto& n : b.nodes)
        if (auto s = put(c, kNodes, n.name, node_record_to_json(n)); !s) return s;
      for (const auto& name : b.delete_nodes)
        if (auto s = remove(c, kNodes, name); !s) return s;
      for (const auto& f : b.put_fences)
        if (auto s = put(c, kFences, f.id, fence_to_json(f)); !s) return s;
      for (const auto& id : b.delete_fences)
        if (auto s = remove(c, kFences, id); !s) return s;
      for (const auto& pr : b.put_projects)
        if (auto s = put(c, kProjects, pr.name, project_to_json(pr)); !s) return s;
      for (const auto& name : b.delete_projects)
        if (auto s = remove(c, kProjects, name); !s) return s;
      for (const auto& u : b.put_usage)
        if (auto s = put(c, kUsage, u.key(), usage_record_to_json(u)); !s) return s;
      for (const auto& t : b.put_node_tokens)
        if (auto s = put(c, kNodeTokens, t.node, node_token_to_json(t)); !s) return s;
      for (const auto& node : b.delete_node_tokens)
        if (auto s = remove(c, kNodeTokens, node); !s) return s;
      for (const auto& r : b.put_reservations)
        if (auto s = put(c, kReservations, r.name, reservation_to_json(r)); !s) return s;
      for (const auto& name : b.delete_reservations)
        if (auto s = remove(c, kReservations, name); !s) return s;
    }
    return ok_status();
  }

  const std::string uri_;
  const PgStoreOptions opts_;
  Mutex db_mu_;                             // Serialises load() with the writer's commits.
  bool fenced_ GUARDED_BY(db_mu_) = false;  // on_fenced was called.
  // A follower's (read_only) tables as of its last load.
  struct FollowerCache {
    CachedTable<int64_t, api::Job> jobs;
    CachedTable<std::string, NodeRecord> nodes;
    CachedTable<std::string, Fence> fences;
    CachedTable<std::string, api::Project> projects;
    CachedTable<std::string, UsageRecord> usage;
    CachedTable<std::string, NodeToken> node_tokens;
    CachedTable<std::string, api::Reservation> reservations;
  } cache_ GUARDED_BY(db_mu_);
  std::unique_ptr<PgConn> conn_ GUARDED_BY(db_mu_);  // Null while lost.
  // Last: its writer stops (committing what is queued) before the connection goes.
  GroupCommitter committer_{[this](const std::vector<const WriteBatch*>& group) { return commit(group); }};
};

}  // namespace

std::string pg_write_begin_sql() {
  return "BEGIN; SET LOCAL idle_in_transaction_session_timeout = " + std::to_string(kWriteIdleMs);
}

Result<std::unique_ptr<Store>> open_pg_store(const std::string& uri, PgStoreOptions opts) {
  auto c = PgConn::connect(uri);
  if (!c) return c.error();
  if (opts.leader_epoch == 0 && !opts.read_only)
    if (auto s = lock_database(**c, uri); !s) return s.error();
  if (auto s = pg_migrate(**c); !s) return s.error().wrap("opening " + redact_db(uri));
  return std::unique_ptr<Store>(new PgStore(uri, std::move(opts), std::move(*c)));
}

Result<std::unique_ptr<Store>> open_store(const std::string& db, SyncMode sync) {
  if (is_postgres_uri(db)) return open_pg_store(db);
  return open_sqlite_store(db, sync);
}

}  // namespace tessel::scheduler
