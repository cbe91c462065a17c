// Online backups of the scheduler's database (sqlite3_backup_*), the check behind
// `tessel-scheduler check`, and the periodic backups of --backup-dir.
#include "tessel/scheduler/backup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <spdlog/spdlog.h>

namespace tessel::scheduler {

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_with_journals(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

// Closes a sqlite3 connection on every path out.
struct Conn {
  sqlite3* db = nullptr;
  ~Conn() { sqlite3_close(db); }
};

// Copies the pages of `src` into `dest` inside one read transaction of `src`, so the
// copy is of one moment even while another connection writes (WAL: the reader
// blocks no writer, and the backup never has to restart).
Result<BackupInfo> copy_pages(Db& src, sqlite3* dest, const BackupOptions& o) {
  const Clock& clock = o.clock ? *o.clock : system_clock();
  const int64_t started_ns = clock.steady_ns();
  if (auto s = src.exec("BEGIN"); !s) return s.error().wrap("begin");
  {
    // BEGIN is deferred: the first read opens the read transaction (and its snapshot).
    Stmt st(src.raw(), "SELECT count(*) FROM sqlite_master");
    if (!st.ok()) return Error{src.errmsg()};
    if (auto s = st.each_row([] { return ok_status(); }); !s) return s.error();
  }
  struct EndRead {
    Db& db;
    ~EndRead() { (void)db.exec("COMMIT"); }
  } end_read{src};
  sqlite3_backup* b = sqlite3_backup_init(dest, "main", src.raw(), "main");
  if (!b) return Error{std::string("backup: ") + sqlite3_errmsg(dest)};
  int rc = SQLITE_OK;
  int busy = 0;
  while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    if (o.cancel && o.cancel->load()) {
      sqlite3_backup_finish(b);
      return Error::unavailable("backup cancelled");
    }
    rc = sqlite3_backup_step(b, o.pages_per_step);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      if (++busy > 500) break;  // About 5 s.
      sqlite3_sleep(10);
    }
  }
  BackupInfo info;
  info.pages = sqlite3_backup_pagecount(b);
  const int done = rc;
  rc = sqlite3_backup_finish(b);
  if (done != SQLITE_DONE) return Error{std::string("backup: ") + sqlite3_errstr(done)};
  if (rc != SQLITE_OK) return Error{std::string("backup: ") + sqlite3_errmsg(dest)};
  info.took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(clock.steady_ns() - started_ns));
  return info;
}

// Gives TMP the name TO: without replacing an existing TO unless `force`.
Status place(const std::string& tmp, const std::string& to, bool force) {
  if (force) {
    if (::rename(tmp.c_str(), to.c_str()) != 0) return Error{"renaming to " + to + ": " + std::strerror(errno)};
    return ok_status();
  }
  if (::link(tmp.c_str(), to.c_str()) == 0) {
    ::unlink(tmp.c_str());
    return ok_status();
  }
  if (errno == EEXIST) return Error::conflict(to + " exists (--force replaces it)");
  // A file system without hard links: check, then rename.
  if (exists(to)) return Error::conflict(to + " exists (--force replaces it)");
  if (::rename(tmp.c_str(), to.c_str()) != 0) return Error{"renaming to " + to + ": " + std::strerror(errno)};
  return ok_status();
}

// Whether `f` is a name run_once() gives: tessel-YYYYMMDDTHHMMSS.mmmZ.db (so the
// rotation never touches another file, the live database included).
bool is_backup_name(const std::string& f, const std::string& suffix = ".db") {
  const std::string shape = "tessel-00000000T000000.000Z";
  if (f.size() != shape.size() + suffix.size() || f.compare(shape.size(), suffix.size(), suffix) != 0) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const bool digit = f[i] >= '0' && f[i] <= '9';
    if (shape[i] == '0' ? !digit : f[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace

Result<BackupInfo> backup_database(const std::string& db, const std::string& to, const BackupOptions& o) {
  if (!o.force && exists(to)) return Error::conflict(to + " exists (--force replaces it)");
  auto src = Db::open_readonly(db);
  if (!src) return src.error();
  const std::string tmp = to + ".partial";
  remove_with_journals(tmp);
  BackupInfo info;
  Status s = ok_status();
  {
    Conn dest;
    if (sqlite3_open_v2(tmp.c_str(), &dest.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      s = Error{"creating " + tmp + ": " + (dest.db ? sqlite3_errmsg(dest.db) : "out of memory")};
    } else {
      auto copied = copy_pages(**src, dest.db, o);
      if (!copied) {
        s = copied.error();
      } else {
        info = *copied;
        auto problems = check_integrity(dest.db, CheckDepth::quick);
        if (!problems)
          s = problems.error().wrap("checking the copy");
        else if (!problems->empty())
          s = Error::conflict("the copy fails quick_check: " + problems->front());
      }
    }
  }  // Closing the copy folds its WAL (if its check opened one) back into the file.
  src->reset();
  if (s) s = fsync_path(tmp);
  if (s) s = place(tmp, to, o.force);
  remove_with_journals(tmp);
  if (!s) return s.error().wrap("backing up " + db + " to " + to);
  (void)fsync_path(parent_dir(to));
  struct stat st {};
  if (::stat(to.c_str(), &st) == 0) info.bytes = st.st_size;
  return info;
}

Result<std::vector<std::string>> check_database(const std::string& db, CheckDepth depth) {
  auto d = Db::open_readonly(db);
  if (!d) return d.error();
  return check_integrity(**d, depth);
}

Result<std::chrono::seconds> parse_duration(const std::string& text) {
  auto bad = [&] {
    return Error::invalid("expected a duration like 90s, 15m, 1h, 2d or 1h30m, got '" + text + "'", "backup-every");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9') return bad();
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > int64_t{1} << 40) return bad();
      ++i;
    }
    int64_t unit = 1;
    if (i < text.size()) {
      switch (text[i]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default: return bad();
      }
      ++i;
    } else if (total != 0) {
      return bad();  // "1h30": a bare number only alone.
    }
    total += n * unit;
    if (total > int64_t{1} << 40) return bad();
  }
  if (total < 1) return bad();
  return std::chrono::seconds(total);
}

PeriodicBackup::PeriodicBackup(PeriodicBackupOptions o, const Clock& clock) : o_(std::move(o)), clock_(clock) {}

PeriodicBackup::~PeriodicBackup() { stop(); }

Status PeriodicBackup::start() {
  std::error_code ec;
  std::filesystem::create_directories(o_.dir, ec);
  if (ec) return Error::invalid("--backup-dir " + o_.dir + ": " + ec.message(), "backup-dir");
  if (::access(o_.dir.c_str(), W_OK) != 0)
    return Error::invalid("--backup-dir " + o_.dir + ": " + std::strerror(errno), "backup-dir");
  thread_ = std::thread([this] { loop(); });
  return ok_status();
}

void PeriodicBackup::stop() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PeriodicBackup::loop() {
  const int64_t every_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(o_.every).count();
  int64_t next_ns = clock_.steady_ns() + every_ns;
  for (;;) {
    {
      MutexLock lk(mu_);
      const std::chrono::nanoseconds wait(std::max<int64_t>(0, next_ns - clock_.steady_ns()));
      if (cv_.wait_for(mu_, wait, [&]() REQUIRES(mu_) { return stop_; })) return;
    }
    next_ns = clock_.steady_ns() + every_ns;
    (void)run_once();  // Logged and counted there.
  }
}

Status PeriodicBackup::run_once() {
  MutexLock lk(run_mu_);
  namespace fs = std::filesystem;
  // Names are by the millisecond; two backups within one get distinct ones.
  const int64_t ms = std::max<int64_t>(clock_.now_ms(), last_name_ms_ + 1);
  last_name_ms_ = ms;
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char name[64];
  std::snprintf(name, sizeof name, "tessel-%04d%02d%02dT%02d%02d%02d.%03dZ.db", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  const std::string to = (fs::path(o_.dir) / name).string();
  BackupOptions bo;
  bo.cancel = &cancel_;
  bo.clock = &clock_;
  auto r = backup_database(o_.db, to, bo);
  if (!r && cancel_) {
    spdlog::info("backup of {} cancelled: shutting down", o_.db);
    return r.error();
  }
  if (!r) {
    ++failed_total_;
    spdlog::error("backup of {} failed: {}", o_.db, r.error().message);
    return r.error();
  }
  ++ok_total_;
  last_ok_unix_s_ = static_cast<int64_t>(secs);
  spdlog::info("backed up {} to {} ({} bytes in {} ms)", o_.db, to, r->bytes, r->took.count());
  // Rotation: the names sort by time; keep the newest `keep`. Also drops what a
  // backup cut short by a crash left behind.
  std::vector<std::string> backups;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(o_.dir, ec)) {
    const std::string f = e.path().filename().string();
    bool leftover = false;
    for (const char* p : {".db.partial", ".db.partial-journal", ".db.partial-wal", ".db.partial-shm"})
      leftover = leftover || is_backup_name(f, p);
    if (leftover) {
      ::unlink(e.path().c_str());
      continue;
    }
    if (is_backup_name(f) && e.is_regular_file(ec)) backups.push_back(e.path().string());
  }
  std::sort(backups.begin(), backups.end());
  for (size_t i = 0; i + static_cast<size_t>(o_.keep) < backups.size(); ++i) {
    remove_with_journals(backups[i]);
    spdlog::info("removed old backup {}", backups[i]);
  }
  return ok_status();
}

std::string PeriodicBackup::metrics() const {
  std::string o;
  auto metric = [&o](const char* name, const char* type, const char* help, int64_t value) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
         std::to_string(value) + "\n";
  };
  metric("tessel_backups_total", "counter", "Periodic database backups written (--backup-dir).",
         static_cast<int64_t>(ok_total_.load()));
  metric("tessel_backup_failures_total", "counter", "Periodic database backups that failed (see the log).",
         static_cast<int64_t>(failed_total_.load()));
  metric("tessel_backup_last_success_timestamp_seconds", "gauge",
         "Unix time of the last periodic backup that succeeded (0: none yet).", last_ok_unix_s_.load());
  return o;
}

}  // namespace tessel::scheduler
