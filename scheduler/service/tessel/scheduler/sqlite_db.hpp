#pragma once
// Thin RAII adapter over sqlite3 that turns its return codes into Status, so
// no sqlite3 error code leaves this file (docs/errors.md).
// Not thread-safe: one owner thread per Db.

#include <sqlite3.h>

#include <memory>
#include <string>

#include "tessel/api/result.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return st_ != nullptr; }
  void reset();
  void bind(int i, int64_t v);
  void bind(int i, const std::string& v);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  int64_t column_int(int i);
  std::string column_text(int i);

 private:
  sqlite3_stmt* st_ = nullptr;
};

class Db {
 public:
  // Also takes an exclusive lock on PATH.lock (not for ":memory:"): a second scheduler
  // on the same database would place the same cards twice, so it is refused.
  static Result<std::unique_ptr<Db>> open(const std::string& path, SyncMode sync = SyncMode::full);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status exec(const std::string& sql);
  std::string errmsg() const { return sqlite3_errmsg(db_); }
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  int lock_fd_ = -1;  // flock()ed PATH.lock: one scheduler per database.
};

// Brings the schema to the newest version (PRAGMA user_version).
Status migrate(Db& db);

}  // namespace tessel::scheduler
