// Db and Stmt: opening the scheduler's SQLite database (lock, creation, integrity and
// identity checks, pragmas, migrations) and reading it back as a Snapshot.
#include "tessel/scheduler/sqlite_db.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace tessel::scheduler {

Stmt::Stmt(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) st_ = nullptr;
}
Stmt::~Stmt() { sqlite3_finalize(st_); }
void Stmt::reset() {
  sqlite3_reset(st_);
  sqlite3_clear_bindings(st_);
}
void Stmt::bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
void Stmt::bind(int i, const std::string& v) {
  sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
int Stmt::step() { return sqlite3_step(st_); }
Status Stmt::each_row(const std::function<Status()>& row) {
  for (;;) {
    const int rc = step();
    if (rc == SQLITE_DONE) return ok_status();
    if (rc != SQLITE_ROW) return Error{sqlite3_errmsg(db_)};
    if (auto s = row(); !s) return s;
  }
}
int64_t Stmt::column_int(int i) { return sqlite3_column_int64(st_, i); }
std::string Stmt::column_text(int i) {
  const auto* p = sqlite3_column_text(st_, i);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(st_, i)) : std::string();
}

const char* to_string(CheckDepth d) { return d == CheckDepth::full ? "integrity_check" : "quick_check"; }

namespace {

// Up to this size (database and WAL) the scheduler runs the full integrity_check at
// start; past it the quicker quick_check.
constexpr int64_t kFullCheckBytes = int64_t{64} << 20;

// Opens and flock()s PATH.lock; the fd, or an error naming the holder.
Result<int> lock_database(const std::string& path) {
  const std::string lock_path = path + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Error{"opening " + lock_path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {0};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK)
      return Error::conflict("database " + path + " is in use by another tessel-scheduler" +
                             (n > 0 ? " (pid " + std::string(holder, static_cast<size_t>(n)) + ")" : ""));
    return Error{"locking " + lock_path + ": " + std::strerror(err)};
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only a hint for the message above; the lock is what counts.
  }
  return fd;
}

// Closes the lock fd unless released (on every early return of open()).
struct LockGuard {
  int fd = -1;
  ~LockGuard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// What an existing file at PATH is, before SQLite opens it: an error unless it starts
// like a SQLite database. Its messages read "database PATH is ...".
Status check_file_kind(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Error::not_found("database " + path + " does not exist");
    return Error{"opening " + path + ": " + std::strerror(errno)};
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  char magic[16] = {0};
  const ssize_t n = ::pread(fd, magic, sizeof magic, 0);
  ::close(fd);
  if (!stat_ok) return Error{"reading " + path + ": " + std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error::invalid("database " + path + " is not a regular file", "db");
  if (st.st_size == 0)
    return Error::invalid("database " + path + " is an empty file (0 bytes), not a Tessel database", "db");
  if (n != static_cast<ssize_t>(sizeof magic) || std::memcmp(magic, "SQLite format 3", sizeof magic) != 0)
    return Error::invalid("database " + path + " is not a SQLite database (it does not start with \"SQLite format 3\")",
                          "db");
  return ok_status();
}

Result<int64_t> pragma_int(Db& db, const char* sql) {
  Stmt st(db.raw(), sql);
  if (!st.ok()) return Error{std::string(sql) + ": " + db.errmsg()};
  int64_t v = 0;
  bool got = false;
  if (auto s = st.each_row([&] {
        v = st.column_int(0);
        got = true;
        return ok_status();
      });
      !s)
    return s.error().wrap(sql);
  if (!got) return Error{std::string(sql) + ": no row"};
  return v;
}

enum class Identity { tessel, legacy, blank };

// Whether `db` is Tessel's: its application_id, or (made before there was one) id 0
// with Tessel's tables (legacy), or an empty database (blank). Otherwise an error
// "database PATH is ...".
Result<Identity> identify(Db& db, const std::string& path) {
  auto app = pragma_int(db, "PRAGMA application_id");
  if (!app) return app.error().wrap("reading " + path);
  auto version = pragma_int(db, "PRAGMA user_version");
  if (!version) return version.error().wrap("reading " + path);
  if (*app == kApplicationId) return Identity::tessel;
  if (*app != 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "(application_id 0x%08x; Tessel's is 0x%08x)", static_cast<uint32_t>(*app),
                  static_cast<uint32_t>(kApplicationId));
    return Error::invalid("database " + path + " is another application's SQLite database " + buf, "db");
  }
  Stmt st(db.raw(), "SELECT name FROM sqlite_master WHERE type = 'table'");
  if (!st.ok()) return Error{"reading " + path + ": " + db.errmsg()};
  int objects = 0, ours = 0;
  if (auto s = st.each_row([&] {
        const std::string name = st.column_text(0);
        ++objects;
        if (name == "jobs" || name == "nodes" || name == "fences") ++ours;
        return ok_status();
      });
      !s)
    return s.error().wrap("reading " + path);
  if (ours == 3 && *version >= 1) return Identity::legacy;
  if (objects == 0 && *version == 0) return Identity::blank;
  return Error::invalid("database " + path + " is a SQLite database without Tessel's tables (jobs, nodes, fences)",
                        "db");
}

std::string one_line(std::string s) {
  const std::string prefix = "*** in database main ***";
  if (s.rfind(prefix, 0) == 0) s.erase(0, prefix.size());
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  return s;
}

// "p1; p2; p3 (and N more)".
std::string summarize(const std::vector<std::string>& problems) {
  std::string out;
  for (size_t i = 0; i < problems.size() && i < 3; ++i) out += (i ? "; " : "") + problems[i];
  if (problems.size() > 3) out += " (and " + std::to_string(problems.size() - 3) + " more)";
  return out;
}

void remove_with_journals(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

}  // namespace

Result<std::unique_ptr<Db>> Db::open(const std::string& path, SyncMode sync, bool verify) {
  const bool is_file = path != ":memory:" && path.rfind("file:", 0) != 0;
  LockGuard lock;
  // What to do about a file that is not an intact Tessel database (ends every such error).
  const std::string refuse = ": not starting on it";
  const std::string restore =
      "restore it from a backup (the newest one `tessel-scheduler check --db BACKUP` finds ok: "
      "with the scheduler stopped, copy it to " +
      path + " and delete " + path + "-wal and " + path + "-shm)";
  if (is_file) {
    auto l = lock_database(path);
    if (!l) return l.error();
    lock.fd = *l;
    if (auto kind = check_file_kind(path); !kind && kind.error().code == ErrorCode::not_found) {
      if (exists(path + "-wal"))
        return Error::invalid("database " + path + " does not exist but " + path +
                                  "-wal does (the database was removed without its write-ahead log)" + refuse + "; " +
                                  restore + ", or delete " + path + "-wal and " + path + "-shm to start with no jobs",
                              "db");
      if (auto s = create(path); !s) return s.error();
      spdlog::info("created a new database {}", path);
    } else if (!kind) {
      if (kind.error().code != ErrorCode::invalid_argument) return kind.error();
      return Error::invalid(kind.error().message + refuse + "; is --db right? If so, " + restore +
                                (file_size(path) == 0 ? ", or delete it to start with no jobs" : ""),
                            "db");
    }
  }
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (is_file ? 0 : SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error{"opening " + path + ": " + msg};
  }
  std::unique_ptr<Db> db(new Db(raw));
  db->lock_fd_ = lock.release();
  sqlite3_busy_timeout(raw, 5000);
  if (is_file && verify) {
    const auto depth =
        file_size(path) + file_size(path + "-wal") <= kFullCheckBytes ? CheckDepth::full : CheckDepth::quick;
    const auto started = std::chrono::steady_clock::now();
    auto problems = check_integrity(*db, depth);
    if (!problems) return problems.error().wrap("checking " + path);
    if (!problems->empty())
      return Error::conflict("database " + path + " is corrupt (" + to_string(depth) + ": " + summarize(*problems) +
                             ")" + refuse + "; " + restore);
    spdlog::info(
        "database {}: {} ok in {} ms", path, to_string(depth),
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
  }
  auto identity = identify(*db, path);
  if (!identity) {
    if (identity.error().code != ErrorCode::invalid_argument) return identity.error();
    return Error::invalid(
        identity.error().message + refuse + "; is --db right? To start with no jobs, give a path that does not exist",
        "db");
  }
  if (*identity == Identity::blank && is_file)  // Only ":memory:" may start blank; files are created whole.
    return Error::invalid("database " + path + " is an empty SQLite database without Tessel's tables" + refuse +
                              "; is --db right? To start with no jobs, give a path that does not exist",
                          "db");
  if (*identity != Identity::tessel) {
    if (auto s = db->exec("PRAGMA application_id = " + std::to_string(kApplicationId)); !s)
      return s.error().wrap("opening " + path + ": setting application_id");
    if (*identity == Identity::legacy)
      spdlog::info("database {} predates application_id: marked as a Tessel database", path);
  }
  // WAL + synchronous=FULL by default: a 201 means the job is on disk (issue 3). With
  // NORMAL the last commits live only in the page cache; a chaos test showed them lost
  // when ext4 aborted its journal and went read-only. Group commit in SqliteStore pays
  // one fsync per group, not per request.
  const char* pragmas = sync == SyncMode::full
                            ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"
                            : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;";
  if (auto s = db->exec(pragmas); !s) return s.error().wrap("opening " + path);
  if (auto s = migrate(*db); !s) return s.error().wrap("opening " + path);
  return db;
}

// A new database is built under PATH.new and renamed into place once whole, so a
// crash while creating it never leaves PATH half made (the caller holds PATH.lock).
Status Db::create(const std::string& path) {
  const std::string tmp = path + ".new";
  remove_with_journals(tmp);
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(tmp.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    remove_with_journals(tmp);
    return Error{"creating " + path + ": " + msg};
  }
  Status s = ok_status();
  {
    Db db(raw);  // Closes on scope exit, which checkpoints the WAL into the file.
    s = db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA application_id = " +
                std::to_string(kApplicationId));
    if (s) s = migrate(db);
  }
  if (s) s = fsync_path(tmp);
  if (s && ::rename(tmp.c_str(), path.c_str()) != 0) s = Error{std::string("rename: ") + std::strerror(errno)};
  if (!s) {
    remove_with_journals(tmp);
    return s.error().wrap("creating " + path);
  }
  (void)fsync_path(parent_dir(path));  // The rename; a failure here loses nothing but the new, empty file.
  return ok_status();
}

Result<std::unique_ptr<Db>> Db::open_readonly(const std::string& path) {
  if (auto kind = check_file_kind(path); !kind) return kind.error();
  sqlite3* raw = nullptr;
  // Read-write when allowed, though it only reads: SQLite then folds the WAL back and
  // removes the -wal and -shm files when the last connection closes, instead of
  // leaving them next to a backup it checked.
  const int mode = ::access(path.c_str(), W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  int rc = sqlite3_open_v2(path.c_str(), &raw, mode | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error{"opening " + path + ": " + msg};
  }
  std::unique_ptr<Db> db(new Db(raw));
  sqlite3_busy_timeout(raw, 5000);
  auto identity = identify(*db, path);
  if (!identity) return identity.error();
  if (*identity == Identity::blank)
    return Error::invalid("database " + path + " is an empty SQLite database without Tessel's tables", "db");
  return db;
}

Db::~Db() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error{msg};
  }
  return ok_status();
}

Result<std::vector<std::string>> check_integrity(Db& db, CheckDepth depth) { return check_integrity(db.raw(), depth); }

Result<std::vector<std::string>> check_integrity(sqlite3* db, CheckDepth depth) {
  // The result codes that mean the file itself is damaged, so that the check could
  // not go on: those are findings, not failures to check.
  auto damaged = [&] {
    const int rc = sqlite3_errcode(db) & 0xff;
    return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
  };
  std::vector<std::string> problems;
  Stmt st(db, depth == CheckDepth::full ? "PRAGMA integrity_check" : "PRAGMA quick_check");
  if (!st.ok()) {
    if (damaged()) return std::vector<std::string>{sqlite3_errmsg(db)};
    return Error{std::string(to_string(depth)) + ": " + sqlite3_errmsg(db)};
  }
  auto s = st.each_row([&] {
    std::string row = st.column_text(0);
    if (row != "ok") problems.push_back(one_line(row));
    return ok_status();
  });
  if (!s) {
    if (!damaged()) return s.error().wrap(to_string(depth));
    problems.push_back(s.error().message);
  }
  return problems;
}

Result<Snapshot> read_snapshot(Db& db) {
  Snapshot s;
  {
    Stmt st(db.raw(), "SELECT body FROM jobs ORDER BY seq");
    if (!st.ok()) return Error{"loading jobs: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto j = nlohmann::json::parse(st.column_text(0), nullptr, false);
      if (j.is_discarded()) return Error::conflict("jobs table: a row is not JSON");
      auto job = api::job_from_json(j);
      if (!job) return job.error();
      s.jobs.push_back(std::move(*job));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading jobs");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM nodes ORDER BY name");
    if (!st.ok()) return Error{"loading nodes: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto n = node_record_from_json(st.column_text(0));
      if (!n) return n.error();
      s.nodes.push_back(std::move(*n));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading nodes");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM fences ORDER BY id");
    if (!st.ok()) return Error{"loading fences: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto f = fence_from_json(st.column_text(0));
      if (!f) return f.error();
      s.fences.push_back(std::move(*f));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading fences");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM projects ORDER BY name");
    if (!st.ok()) return Error{"loading projects: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto p = project_from_json(st.column_text(0));
      if (!p) return p.error();
      s.projects.push_back(std::move(*p));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading projects");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM usage_records ORDER BY key");
    if (!st.ok()) return Error{"loading usage: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto u = usage_record_from_json(st.column_text(0));
      if (!u) return u.error();
      s.usage.push_back(std::move(*u));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading usage");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM node_tokens ORDER BY node");
    if (!st.ok()) return Error{"loading node tokens: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto t = node_token_from_json(st.column_text(0));
      if (!t) return t.error();
      s.node_tokens.push_back(std::move(*t));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading node tokens");
  }
  {
    Stmt st(db.raw(), "SELECT body FROM reservations ORDER BY name");
    if (!st.ok()) return Error{"loading reservations: " + db.errmsg()};
    auto r = st.each_row([&]() -> Status {
      auto v = reservation_from_json(st.column_text(0));
      if (!v) return v.error();
      s.reservations.push_back(std::move(*v));
      return ok_status();
    });
    if (!r) return r.error().wrap("loading reservations");
  }
  return s;
}

Status fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"opening " + path + ": " + std::strerror(errno)};
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Error{"fsync " + path + ": " + std::strerror(err)};
  return ok_status();
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace tessel::scheduler
