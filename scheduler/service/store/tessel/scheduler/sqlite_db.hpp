#pragma once
// Thin RAII adapter over sqlite3 that turns its return codes into Status, so
// no sqlite3 error code leaves this file (docs/errors.md).
// Not thread-safe: one owner thread per Db.

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler {

// PRAGMA application_id of a Tessel scheduler database ("TSSL"), set when it is created.
inline constexpr int32_t kApplicationId = 0x5453534c;

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
  // Steps to the end, calling `row` on each row. Anything but SQLITE_ROW or SQLITE_DONE
  // (a corrupt page, an I/O error) is an error with sqlite's message, never an end of
  // the rows; so is an error `row` returns, which stops the loop.
  Status each_row(const std::function<Status()>& row);
  int64_t column_int(int i);
  std::string column_text(int i);

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
};

class Db {
 public:
  // Also takes an exclusive lock on PATH.lock (not for ":memory:"): a second scheduler
  // on the same database would place the same cards twice, so it is refused.
  // A new database is created (atomically, with Tessel's application_id) only when PATH
  // does not exist. An existing file must be an intact Tessel database: an empty file,
  // a file that is not SQLite, another application's SQLite database, or one that fails
  // its integrity check is refused with an error that says what to do. A database
  // made before application_id existed (Tessel's tables, id 0) is adopted.
  // `verify` false skips the integrity check (for tests of the layers under it).
  static Result<std::unique_ptr<Db>> open(const std::string& path, SyncMode sync = SyncMode::full, bool verify = true);
  // For reading only, without PATH.lock (a scheduler may be running on it) and without
  // migrations, for `tessel-scheduler check` and `backup`. The file must exist and be a
  // Tessel database (an old one with application_id 0 included); nothing is checked.
  static Result<std::unique_ptr<Db>> open_readonly(const std::string& path);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status exec(const std::string& sql);
  std::string errmsg() const { return sqlite3_errmsg(db_); }
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  // Makes a new, empty database at PATH (which does not exist).
  static Status create(const std::string& path);
  sqlite3* db_;
  int lock_fd_ = -1;  // flock()ed PATH.lock: one scheduler per database.
};

// Brings the schema to the newest version (PRAGMA user_version).
Status migrate(Db& db);

enum class CheckDepth {
  quick,  // PRAGMA quick_check: every page and record, not the indexes' contents.
  full,   // PRAGMA integrity_check: also that every index matches its table.
};
const char* to_string(CheckDepth d);  // "quick_check", "integrity_check"

// Runs the check on `db`; the problems it found, one line each, none when intact. A
// page too damaged for the check to go on is a problem too; an error only when the
// check could not run for another reason (I/O, out of memory, busy).
Result<std::vector<std::string>> check_integrity(Db& db, CheckDepth depth);
Result<std::vector<std::string>> check_integrity(sqlite3* db, CheckDepth depth);

// Every job, node and fence in `db`. A read error is an error, never a shorter snapshot.
Result<Snapshot> read_snapshot(Db& db);

// File helpers the store's open and backup share: fsync a file or directory by path,
// and the directory a path is in ("." for a bare name).
Status fsync_path(const std::string& path);
std::string parent_dir(const std::string& path);

}  // namespace tessel::scheduler
