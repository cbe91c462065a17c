#include "tessel/scheduler/sqlite_db.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tessel::scheduler {

Stmt::Stmt(sqlite3* db, const char* sql) {
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
int64_t Stmt::column_int(int i) { return sqlite3_column_int64(st_, i); }
std::string Stmt::column_text(int i) {
  const auto* p = sqlite3_column_text(st_, i);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(st_, i)) : std::string();
}

namespace {
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
      return Error{"database " + path + " is in use by another tessel-scheduler" +
                   (n > 0 ? " (pid " + std::string(holder, static_cast<size_t>(n)) + ")" : "")};
    return Error{"locking " + lock_path + ": " + std::strerror(err)};
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only a hint for the message above; the lock is what counts.
  }
  return fd;
}
}  // namespace

Result<std::unique_ptr<Db>> Db::open(const std::string& path, SyncMode sync) {
  int lock_fd = -1;
  if (path != ":memory:" && path.rfind("file:", 0) != 0) {
    auto lock = lock_database(path);
    if (!lock) return lock.error();
    lock_fd = *lock;
  }
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    if (lock_fd >= 0) ::close(lock_fd);
    return Error{"opening " + path + ": " + msg};
  }
  std::unique_ptr<Db> db(new Db(raw));
  db->lock_fd_ = lock_fd;
  sqlite3_busy_timeout(raw, 5000);
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

Db::~Db() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{msg};
  }
  return ok_status();
}

}  // namespace tessel::scheduler
