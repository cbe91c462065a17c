// The store refuses corrupt, empty and foreign database files, never reads a shorter
// snapshot, still opens old databases; backups, checks and their rotation.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "db_files.hpp"
#include "eventually.hpp"
#include "files.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/backup.hpp"
#include "tessel/scheduler/sqlite_db.hpp"

namespace tessel::scheduler::testing {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The jobs of the report: 2,244 jobs, garbage in one page of the jobs table.
TEST(StoreIntegrity, CorruptJobsPageIsRefusedAtOpen) {
  testkit::TempDir dir("tessel-corrupt");
  const std::string db = dir.str("s.db");
  make_database(db, 2244);
  corrupt_page(db, jobs_leaf_page(db));
  auto store = open_sqlite_store(db);
  ASSERT_FALSE(store.ok()) << "opened a database with a corrupt jobs page";
  const std::string& msg = store.error().message;
  EXPECT_TRUE(contains(msg, "database " + db + " is corrupt (integrity_check: ")) << msg;
  EXPECT_TRUE(contains(msg, "not starting on it")) << msg;
  EXPECT_TRUE(contains(msg, "restore it from a backup")) << msg;
  EXPECT_TRUE(contains(msg, "tessel-scheduler check --db BACKUP")) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(store.error().code, ErrorCode::conflict);
}

// Without the check at open, reading stops at the corrupt page: that is an error,
// never the end of the jobs (it used to give 191 of 2,244).
TEST(StoreIntegrity, ReadErrorIsAnErrorNotTheEndOfTheRows) {
  testkit::TempDir dir("tessel-readerr");
  const std::string db = dir.str("s.db");
  make_database(db, 2244);
  corrupt_page(db, jobs_leaf_page(db));
  auto d = Db::open(db, SyncMode::full, /*verify=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message;
  auto snap = read_snapshot(**d);
  ASSERT_FALSE(snap.ok()) << "read " << snap->jobs.size() << " of 2244 jobs as if that were all";
  EXPECT_TRUE(contains(snap.error().message, "loading jobs: database disk image is malformed")) << snap.error().message;
}

TEST(StoreIntegrity, CheckFindsTheCorruptPage) {
  testkit::TempDir dir("tessel-check");
  const std::string db = dir.str("s.db");
  make_database(db, 2244);
  for (auto depth : {CheckDepth::quick, CheckDepth::full}) {
    auto ok = check_database(db, depth);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_TRUE(ok->empty()) << ok->front();
  }
  corrupt_page(db, jobs_leaf_page(db));
  for (auto depth : {CheckDepth::quick, CheckDepth::full}) {
    auto bad = check_database(db, depth);
    ASSERT_TRUE(bad.ok()) << bad.error().message;
    EXPECT_FALSE(bad->empty()) << to_string(depth) << " found nothing";
  }
}

TEST(StoreIntegrity, EmptyFileIsRefusedAndLeftAlone) {
  testkit::TempDir dir("tessel-empty");
  const std::string db = dir.str("s.db");
  std::ofstream(db).close();
  auto store = open_sqlite_store(db);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "database " + db + " is an empty file (0 bytes), not a Tessel database"))
      << store.error().message;
  EXPECT_TRUE(contains(store.error().message, "or delete it to start with no jobs")) << store.error().message;
  EXPECT_EQ(store.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(fs::file_size(db), 0u);
  EXPECT_FALSE(check_database(db, CheckDepth::quick).ok());
}

TEST(StoreIntegrity, FileThatIsNotSqliteIsRefused) {
  testkit::TempDir dir("tessel-notsqlite");
  const std::string db = dir.str("s.db");
  testkit::write_file(db, "jobs:\n  - j-00000001\n");
  auto store = open_sqlite_store(db);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "database " + db + " is not a SQLite database")) << store.error().message;
  EXPECT_EQ(testkit::read_file(db), "jobs:\n  - j-00000001\n");
}

TEST(StoreIntegrity, AnotherApplicationsSqliteDatabaseIsRefused) {
  testkit::TempDir dir("tessel-foreign");
  const std::string other = dir.str("other.db");
  sql(other, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x')");
  auto store = open_sqlite_store(other);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "is a SQLite database without Tessel's tables (jobs, nodes, fences)"))
      << store.error().message;
  EXPECT_EQ(sql(other, "SELECT count(*) FROM sqlite_master"), "1");  // Nothing was added.

  // Tessel's tables, but another application's id.
  const std::string marked = dir.str("marked.db");
  make_database(marked, 3);
  sql(marked, "PRAGMA application_id = 42");
  store = open_sqlite_store(marked);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "is another application's SQLite database (application_id 0x0000002a"))
      << store.error().message;

  // An empty SQLite database (a header, nothing else) is not taken as a new one either.
  const std::string blank = dir.str("blank.db");
  sql(blank, "CREATE TABLE t (x); DROP TABLE t");
  ASSERT_GT(fs::file_size(blank), 0u);
  store = open_sqlite_store(blank);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "without Tessel's tables")) << store.error().message;
}

// A database made before application_id existed: the schema of migration 1, id 0.
TEST(StoreIntegrity, OldDatabaseWithoutApplicationIdOpensAndIsMarked) {
  testkit::TempDir dir("tessel-legacy");
  const std::string db = dir.str("s.db");
  std::string rows;
  for (int i = 1; i <= 5; ++i) {
    std::string body = api::to_json(test_job(i)).dump();
    std::string quoted;
    for (char c : body) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    rows += "INSERT INTO jobs VALUES (" + std::to_string(i) + ", '" + make_job_id(i) + "', '" + quoted + "');";
  }
  sql(db,
      "PRAGMA journal_mode=WAL;"
      "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL);"
      "CREATE TABLE nodes (name TEXT PRIMARY KEY, body TEXT NOT NULL);"
      "CREATE TABLE fences (id TEXT PRIMARY KEY, body TEXT NOT NULL);"
      "PRAGMA user_version = 1;" +
          rows);
  ASSERT_EQ(sql_int(db, "PRAGMA application_id"), 0);
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto snap = (*store)->load();
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    ASSERT_EQ(snap->jobs.size(), 5u);
    EXPECT_EQ(snap->jobs[4].id, "j-00000005");
  }
  EXPECT_EQ(sql_int(db, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(sql_int(db, "PRAGMA user_version"),
            6);  // Migrated: job dependencies, projects, usage, node tokens, reservations.
  auto again = open_sqlite_store(db);
  ASSERT_TRUE(again.ok()) << again.error().message;
}

TEST(StoreIntegrity, NewDatabaseIsCreatedWholeWithTesselsApplicationId) {
  testkit::TempDir dir("tessel-new");
  const std::string db = dir.str("s.db");
  make_database(db, 1);
  EXPECT_EQ(sql_int(db, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(sql_int(db, "PRAGMA user_version"), 6);
  EXPECT_FALSE(fs::exists(db + ".new"));
  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok()) << store.error().message;
  auto snap = (*store)->load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->jobs.size(), 1u);
}

// The database was deleted but its write-ahead log was not: a new database would
// pick up that stale log, so it is refused.
TEST(StoreIntegrity, MissingDatabaseWithLeftoverWalIsRefused) {
  testkit::TempDir dir("tessel-wal");
  const std::string db = dir.str("s.db");
  testkit::write_file(db + "-wal", std::string(64, 'x'));
  auto store = open_sqlite_store(db);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(contains(store.error().message, "database " + db + " does not exist but " + db + "-wal does"))
      << store.error().message;
  EXPECT_FALSE(fs::exists(db));
}

// A backup made while the store keeps committing is one consistent moment: it passes
// its check and holds every job committed before it began.
TEST(Backup, WhileWritingIsConsistentAndChecked) {
  testkit::TempDir dir("tessel-backup");
  const std::string db = dir.str("s.db"), copy = dir.str("copy.db");
  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok()) << store.error().message;
  std::atomic<int64_t> committed{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int64_t seq = 1; !stop; ++seq) {
      WriteBatch b;
      b.jobs.push_back(test_job(seq));
      if (!(*store)->write(b).ok()) return;
      committed = seq;
    }
  });
  const bool started = testkit::eventually([&] { return committed >= 200; });
  const int64_t before = committed;
  BackupOptions small_steps;
  small_steps.pages_per_step = 1;  // Many steps, writes in between.
  auto r = backup_database(db, copy, small_steps);
  stop = true;
  writer.join();
  ASSERT_TRUE(started) << "the store committed only " << before << " jobs";
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->bytes, 0);
  EXPECT_FALSE(fs::exists(copy + ".partial"));

  auto problems = check_database(copy, CheckDepth::full);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  EXPECT_TRUE(problems->empty()) << problems->front();
  EXPECT_EQ(sql_int(copy, "PRAGMA application_id"), kApplicationId);
  auto restored = open_sqlite_store(copy);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  auto snap = (*restored)->load();
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  ASSERT_GE(static_cast<int64_t>(snap->jobs.size()), before);
  for (size_t i = 0; i < snap->jobs.size(); ++i) EXPECT_EQ(snap->jobs[i].id, make_job_id(i + 1));  // No gaps.
}

TEST(Backup, RefusesToOverwriteUnlessForced) {
  testkit::TempDir dir("tessel-backup-force");
  const std::string db = dir.str("s.db"), copy = dir.str("copy.db");
  make_database(db, 3);
  testkit::write_file(copy, "precious");
  auto r = backup_database(db, copy);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, copy + " exists (--force replaces it)")) << r.error().message;
  EXPECT_EQ(testkit::read_file(copy), "precious");
  BackupOptions force;
  force.force = true;
  r = backup_database(db, copy, force);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto problems = check_database(copy, CheckDepth::quick);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  EXPECT_TRUE(problems->empty());
}

TEST(Backup, OfACorruptDatabaseFailsItsCheckAndLeavesNoFile) {
  testkit::TempDir dir("tessel-backup-corrupt");
  const std::string db = dir.str("s.db"), copy = dir.str("copy.db");
  make_database(db, 2244);
  corrupt_page(db, jobs_leaf_page(db));
  auto r = backup_database(db, copy);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "the copy fails quick_check")) << r.error().message;
  EXPECT_FALSE(fs::exists(copy));
  EXPECT_FALSE(fs::exists(copy + ".partial"));
}

TEST(Backup, ParsesDurations) {
  EXPECT_EQ(parse_duration("90s")->count(), 90);
  EXPECT_EQ(parse_duration("15m")->count(), 900);
  EXPECT_EQ(parse_duration("1h")->count(), 3600);
  EXPECT_EQ(parse_duration("2d")->count(), 172800);
  EXPECT_EQ(parse_duration("1h30m")->count(), 5400);
  EXPECT_EQ(parse_duration("45")->count(), 45);
  for (const char* bad : {"", "0", "0s", "h", "1x", "-1h", "1h30", "1.5h", " 1h"})
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
}

std::vector<std::string> backups_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PeriodicBackup, KeepsTheNewestAndCountsOutcomes) {
  testkit::TempDir dir("tessel-periodic");
  const std::string db = dir.str("s.db"), out = dir.str("backups");
  make_database(db, 10);
  fs::create_directories(out);
  testkit::write_file(out + "/tessel-live.db", "not a backup");  // Never rotated away.
  PeriodicBackup b(PeriodicBackupOptions{db, out, std::chrono::hours(1), 2});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.run_once().ok());
  auto files = backups_in(out);
  ASSERT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
  EXPECT_EQ(files[2], "tessel-live.db");
  for (int i = 0; i < 2; ++i) {
    auto problems = check_database(out + "/" + files[i], CheckDepth::full);
    ASSERT_TRUE(problems.ok()) << problems.error().message;
    EXPECT_TRUE(problems->empty());
  }
  EXPECT_TRUE(contains(b.metrics(), "tessel_backups_total 3\n")) << b.metrics();
  EXPECT_TRUE(contains(b.metrics(), "tessel_backup_failures_total 0\n")) << b.metrics();

  fs::remove(db);
  EXPECT_FALSE(b.run_once().ok());
  EXPECT_TRUE(contains(b.metrics(), "tessel_backup_failures_total 1\n")) << b.metrics();
  EXPECT_EQ(backups_in(out).size(), 3u);
}

}  // namespace
}  // namespace tessel::scheduler::testing
