#pragma once
// Backups of the scheduler's database while it runs (SQLite's online backup API),
// integrity checks, and the periodic backups of --backup-dir.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/sqlite_db.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

struct BackupOptions {
  bool force = false;                         // Replace an existing destination.
  int pages_per_step = 1024;                  // Copied per sqlite3_backup_step().
  const std::atomic<bool>* cancel = nullptr;  // When set, the copy stops between steps.
  const Clock* clock = nullptr;               // Times BackupInfo::took; null: system_clock().
};

struct BackupInfo {
  int64_t pages = 0;
  int64_t bytes = 0;
  std::chrono::milliseconds took{0};
};

// Copies the Tessel database at DB to TO, consistent as of one moment, while a
// scheduler may be writing to DB: a connection of its own holds one read transaction
// (in WAL mode that blocks no writer) while the pages are copied in steps. The copy
// is written to TO.partial, checked with quick_check, fsynced, and only then given
// its name. Errors: not_found (no DB), invalid_argument (DB is not a Tessel
// database), conflict (TO exists and !force, or the copy fails its check).
Result<BackupInfo> backup_database(const std::string& db, const std::string& to, const BackupOptions& o = {});

// Opens DB read-only (a scheduler may be running on it) and checks it: its problems,
// none when it is intact. Errors as for backup_database, or when the check cannot run.
Result<std::vector<std::string>> check_database(const std::string& db, CheckDepth depth);

// "90s", "15m", "1h", "2d", "1h30m", or a number of seconds; at least one second.
Result<std::chrono::seconds> parse_duration(const std::string& text);

struct PeriodicBackupOptions {
  std::string db;   // The scheduler's database.
  std::string dir;  // Where the backups go, as DIR/tessel-YYYYMMDDTHHMMSS.mmmZ.db.
  std::chrono::seconds every{3600};
  int keep = 24;  // The newest this many are kept, older ones deleted.
};

// Backs the database up every `every` on a thread of its own, keeps the newest
// `keep`, logs each backup and each failure, and counts them for /metrics. Backup
// names and the pacing of the thread's waits read `clock`, which outlives it.
class PeriodicBackup {
 public:
  explicit PeriodicBackup(PeriodicBackupOptions o, const Clock& clock = system_clock());
  ~PeriodicBackup();
  PeriodicBackup(const PeriodicBackup&) = delete;
  PeriodicBackup& operator=(const PeriodicBackup&) = delete;

  // Creates the directory if needed (an error when it cannot) and starts the thread;
  // the first backup is made one period after start.
  Status start() EXCLUDES(mu_);
  // Stops the thread, cancelling a backup under way (its partial file is removed).
  void stop() EXCLUDES(mu_);
  // One backup and the rotation, now (the thread calls it; so may tests).
  Status run_once() EXCLUDES(run_mu_);
  // tessel_backups_total, tessel_backup_failures_total and
  // tessel_backup_last_success_timestamp_seconds in the Prometheus text format.
  std::string metrics() const;

 private:
  void loop() EXCLUDES(mu_);

  PeriodicBackupOptions o_;
  const Clock& clock_;
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> ok_total_{0}, failed_total_{0};
  std::atomic<int64_t> last_ok_unix_s_{0};
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  Mutex run_mu_;                                  // Serialises run_once().
  int64_t last_name_ms_ GUARDED_BY(run_mu_) = 0;  // Of the last backup's name.
  std::thread thread_;
};

}  // namespace tessel::scheduler
