#include "tessel/scheduler/sqlite_db.hpp"

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

Result<std::unique_ptr<Db>> Db::open(const std::string& path, SyncMode sync) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Error{"opening " + path + ": " + msg};
  }
  std::unique_ptr<Db> db(new Db(raw));
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

Db::~Db() { sqlite3_close(db_); }

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
