// Versioned schema migrations. Each entry upgrades version i to i+1; the
// database records its version in PRAGMA user_version. Never edit a shipped
// migration: append a new one.
#include <memory>
#include <vector>

#include "tessel/scheduler/sqlite_db.hpp"

namespace tessel::scheduler {

namespace {
const std::vector<const char*>& migrations() {
  static const std::vector<const char*> m = {
      // 0 -> 1: jobs (body = api::to_json(Job)), nodes and fences as JSON documents.
      // One migration of three statements, concatenated on purpose.
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);"
      "CREATE TABLE nodes (name TEXT PRIMARY KEY, body TEXT NOT NULL);"
      "CREATE TABLE fences (id TEXT PRIMARY KEY, body TEXT NOT NULL);",
      // 1 -> 2: a job's spec may hold dependencies (after_ok, after_any, after_not_ok),
      // stored with the job in its body. No table changes: the new version makes an
      // older binary, whose strict spec parser would fail on them, refuse the database
      // at open ("schema version 2 is newer than this binary") instead of at its first
      // dependent job.
      "",
      // 2 -> 3: projects (body = api::to_json(Project)); jobs' specs may name a
      // project and be preemptible (in their bodies, as for version 2).
      "CREATE TABLE projects (name TEXT PRIMARY KEY, body TEXT NOT NULL);",
      // 3 -> 4: accounting, one usage record per ended job attempt (body =
      // usage_record_to_json), keyed "JOB/ATTEMPT"; kept when the job is pruned.
      "CREATE TABLE usage_records (key TEXT PRIMARY KEY, body TEXT NOT NULL);",
      // 4 -> 5: admin-issued agent tokens, one per node, only their SHA-256 (body =
      // node_token_to_json).
      "CREATE TABLE node_tokens (node TEXT PRIMARY KEY, body TEXT NOT NULL);",
      // 5 -> 6: reservations of nodes for a window (issue 32; body =
      // reservation_to_json), keyed by name; jobs' specs may name one.
      "CREATE TABLE reservations (name TEXT PRIMARY KEY, body TEXT NOT NULL);",
  };
  return m;
}
}  // namespace

Status migrate(Db& db) {
  int64_t version = 0;
  {
    Stmt st(db.raw(), "PRAGMA user_version");
    if (!st.ok() || st.step() != SQLITE_ROW) return Error{"reading user_version: " + db.errmsg()};
    version = st.column_int(0);
  }
  const auto& m = migrations();
  if (version > static_cast<int64_t>(m.size()))
    return Error::conflict("database schema version " + std::to_string(version) + " is newer than this binary (" +
                           std::to_string(m.size()) + ")");
  for (auto v = version; v < static_cast<int64_t>(m.size()); ++v) {
    std::string sql = std::string("BEGIN;") + m[v] + "PRAGMA user_version = " + std::to_string(v + 1) + ";COMMIT;";
    if (auto s = db.exec(sql); !s) {
      (void)db.exec("ROLLBACK");
      return s.error().wrap("migration " + std::to_string(v + 1));
    }
  }
  return ok_status();
}

}  // namespace tessel::scheduler
