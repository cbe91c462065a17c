#pragma once
// Thin RAII adapter over libpq that turns its results into Status and Result, so no
// libpq type or status code leaves the store (docs/errors.md). The libpq types are
// only declared here: code that includes this header needs no libpq headers.
// Not thread-safe: one owner thread per PgConn.

#include <memory>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"

struct pg_conn;
struct pg_result;

namespace tessel::scheduler {

// The rows of one query, as text.
class PgRows {
 public:
  explicit PgRows(pg_result* r);
  int size() const;
  std::string text(int row, int col) const;

 private:
  struct Clear {
    void operator()(pg_result* r) const;
  };
  std::unique_ptr<pg_result, Clear> r_;
};

class PgConn {
 public:
  // Connects to `uri` (a postgresql:// URI or a libpq keyword string), with a connect
  // timeout of 5 s unless the URI names one, TCP keepalives, and this session's
  // settings: synchronous_commit on (COMMIT returns once the WAL is flushed) and a
  // statement timeout of `statement_timeout_ms`. Errors never contain the password.
  static Result<std::unique_ptr<PgConn>> connect(const std::string& uri, int statement_timeout_ms = 10000);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // One or more statements without parameters (BEGIN, COMMIT, DDL).
  Status exec(const std::string& sql);
  // One statement with $1.. parameters, as text.
  Result<PgRows> query(const std::string& sql, const std::vector<std::string>& params = {});
  // Whether the connection is lost (the server went away or restarted): the owner
  // should drop it and connect again.
  bool broken() const;
  // After exec("LISTEN channel"): waits up to `timeout_ms` for a notification; true
  // when at least one came (all that came are consumed). Errors: the connection failed.
  Result<bool> wait_notification(int timeout_ms);

 private:
  explicit PgConn(pg_conn* c) : c_(c) {}
  std::string errmsg() const;
  pg_conn* c_;
};

// Whether --db names a PostgreSQL database ("postgresql://" or "postgres://") rather
// than a SQLite file.
bool is_postgres_uri(const std::string& db);

// `db` fit for logs and messages: a URI's password (in its user part or as a
// password= parameter) replaced by "***"; anything else unchanged.
std::string redact_db(const std::string& db);

}  // namespace tessel::scheduler
