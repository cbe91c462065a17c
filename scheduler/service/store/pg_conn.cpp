// PgConn and PgRows over libpq, and what the scheduler shows of a database URI.
#include "tessel/scheduler/pg_conn.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <array>
#include <cerrno>

namespace tessel::scheduler {

namespace {

// libpq's messages end in a newline and may span lines; one line for logs.
std::string one_line(const char* msg) {
  std::string s = msg ? msg : "";
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown libpq error" : s;
}

void ignore_notice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

PgRows::PgRows(pg_result* r) : r_(r) {}
void PgRows::Clear::operator()(pg_result* r) const { PQclear(r); }
int PgRows::size() const { return PQntuples(r_.get()); }
std::string PgRows::text(int row, int col) const {
  const char* v = PQgetvalue(r_.get(), row, col);
  return std::string(v, static_cast<size_t>(PQgetlength(r_.get(), row, col)));
}

Result<std::unique_ptr<PgConn>> PgConn::connect(const std::string& uri, int statement_timeout_ms) {
  // Defaults come first: what the URI sets overrides them (libpq keeps the last value).
  const std::array<const char*, 8> keys = {
      "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
      "keepalives_count", "application_name", "dbname",          nullptr};
  const std::array<const char*, 8> values = {"5", "1", "5", "2", "3", "tessel-scheduler", uri.c_str(), nullptr};
  pg_conn* raw = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (raw == nullptr) return Error::unavailable("connecting to " + redact_db(uri) + ": out of memory");
  std::unique_ptr<PgConn> c(new PgConn(raw));
  if (PQstatus(raw) != CONNECTION_OK) return Error::unavailable("connecting to " + redact_db(uri) + ": " + c->errmsg());
  PQsetNoticeProcessor(raw, ignore_notice, nullptr);
  // synchronous_commit on: COMMIT returns once the WAL is flushed (and, with a
  // synchronous standby configured, once the standby has it), so a 201 means committed.
  const std::string settings =
      "SET synchronous_commit = on; SET statement_timeout = " + std::to_string(statement_timeout_ms);
  if (auto s = c->exec(settings); !s) return s.error().wrap("connecting to " + redact_db(uri));
  return c;
}

PgConn::~PgConn() { PQfinish(c_); }

std::string PgConn::errmsg() const { return one_line(PQerrorMessage(c_)); }

bool PgConn::broken() const { return PQstatus(c_) != CONNECTION_OK; }

Result<bool> PgConn::wait_notification(int timeout_ms) {
  const auto take_all = [this] {
    bool any = false;
    while (PGnotify* n = PQnotifies(c_)) {
      PQfreemem(n);
      any = true;
    }
    return any;
  };
  if (take_all()) return true;
  const int fd = PQsocket(c_);
  if (fd < 0) return Error::unavailable("waiting for a notification: no connection");
  pollfd p{fd, POLLIN, 0};
  const int n = ::poll(&p, 1, timeout_ms);
  if (n < 0 && errno != EINTR) return Error::unavailable("waiting for a notification: poll failed");
  if (n > 0 && PQconsumeInput(c_) == 0) return Error::unavailable("waiting for a notification: " + errmsg());
  return take_all();
}

Status PgConn::exec(const std::string& sql) {
  pg_result* r = PQexec(c_, sql.c_str());  // Several statements: stops at the first error.
  PgRows rows(r);
  const auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    const std::string msg = r ? one_line(PQresultErrorMessage(r)) : errmsg();
    return broken() ? Error::unavailable(msg) : Error{msg};
  }
  return ok_status();
}

Result<PgRows> PgConn::query(const std::string& sql, const std::vector<std::string>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  pg_result* r =
      PQexecParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
  PgRows rows(r);
  const auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    const std::string msg = r ? one_line(PQresultErrorMessage(r)) : errmsg();
    return broken() ? Error::unavailable(msg) : Error{msg};
  }
  return rows;
}

bool is_postgres_uri(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

std::string redact_db(const std::string& db) {
  if (!is_postgres_uri(db)) return db;
  std::string out = db;
  const size_t start = out.find("://") + 3;
  const size_t query = out.find('?');
  const size_t at = out.rfind('@', query == std::string::npos ? std::string::npos : query);
  if (at != std::string::npos && at > start) {
    const size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  const size_t q = out.find('?');
  if (q == std::string::npos) return out;
  std::string params = out.substr(q + 1), redacted;
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t amp = params.find('&', pos);
    if (amp == std::string::npos) amp = params.size();
    std::string kv = params.substr(pos, amp - pos);
    if (kv.rfind("password=", 0) == 0) kv = "password=***";
    redacted += (pos == 0 ? "" : "&") + kv;
    pos = amp + 1;
  }
  return out.substr(0, q + 1) + redacted;
}

}  // namespace tessel::scheduler
