// The real tessel-scheduler on damaged databases (refuses to start, says why and what
// to do), its `backup` and `check` subcommands, restoring a backup, and --backup-dir.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "binaries.hpp"
#include "child_process.hpp"
#include "db_files.hpp"
#include "eventually.hpp"
#include "files.hpp"
#include "rest_client.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

namespace fs = std::filesystem;
using testkit::eventually;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Exit {
  int code = -1;  // -1: still running at the deadline, or killed by a signal.
  std::string err;
};

// Starts the scheduler on DB, expecting it to exit by itself: its exit code and stderr.
Exit start_expecting_exit(const testkit::TempDir& dir, const std::string& db) {
  testkit::SchedulerOptions o;
  o.bin = TESSEL_SCHEDULER_BIN;
  o.db = db;
  o.stdout_path = dir.str("refused.out");
  o.stderr_path = dir.str("refused.err");
  testkit::Child child = testkit::start_scheduler(o);
  Exit e;
  if (!eventually([&] { return !child.running(); }, std::chrono::seconds(20))) return e;
  const int st = child.wait();
  if (WIFEXITED(st)) e.code = WEXITSTATUS(st);
  e.err = testkit::read_file(dir.str("refused.err"));
  return e;
}

// `tessel-scheduler ARGS...` to completion.
testkit::RunResult run(std::vector<std::string> args) {
  testkit::ChildOptions o;
  o.argv = {TESSEL_SCHEDULER_BIN};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  return testkit::run_process(o, std::chrono::seconds(60));
}

// A scheduler serving DB on port 0.
struct Running {
  Running(const testkit::TempDir& dir, const std::string& db, std::vector<std::string> args = {}) {
    static int starts = 0;
    testkit::SchedulerOptions o;
    o.bin = TESSEL_SCHEDULER_BIN;
    o.db = db;
    o.args = std::move(args);
    o.stdout_path = dir.str("scheduler-" + std::to_string(starts) + ".out");
    o.stderr_path = err_path = dir.str("scheduler-" + std::to_string(starts++) + ".err");
    child = testkit::start_scheduler(o);
    port = child.wait_listening();
  }
  std::string log() const { return testkit::read_file(err_path); }
  std::string err_path;
  testkit::Child child;
  int port = 0;
};

std::set<std::string> job_ids(const testkit::RestClient& api) {
  std::set<std::string> ids;
  for (const auto& j : api.all_jobs()) ids.insert(j["id"].get<std::string>());
  return ids;
}

TEST(SchedulerIntegrity, RefusesToStartOnACorruptDatabase) {
  testkit::TempDir dir("tessel-bin-corrupt");
  const std::string db = dir.str("s.db");
  make_database(db, 2244);
  corrupt_page(db, jobs_leaf_page(db));
  Exit e = start_expecting_exit(dir, db);
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_TRUE(contains(e.err, "tessel-scheduler: database " + db + " is corrupt (integrity_check: ")) << e.err;
  EXPECT_TRUE(contains(e.err, "not starting on it; restore it from a backup")) << e.err;
  EXPECT_TRUE(contains(e.err, "copy it to " + db + " and delete " + db + "-wal and " + db + "-shm")) << e.err;
}

TEST(SchedulerIntegrity, RefusesToStartOnAnEmptyOrForeignFile) {
  testkit::TempDir dir("tessel-bin-empty");
  const std::string db = dir.str("s.db");
  std::ofstream(db).close();
  Exit e = start_expecting_exit(dir, db);
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_TRUE(contains(e.err, "tessel-scheduler: database " + db +
                                  " is an empty file (0 bytes), not a Tessel database: not starting on it"))
      << e.err;
  EXPECT_EQ(fs::file_size(db), 0u);  // Not made into a new database.

  testkit::write_file(db, "hello\n");
  e = start_expecting_exit(dir, db);
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_TRUE(contains(e.err, "is not a SQLite database")) << e.err;
}

// Backup while a scheduler runs and takes submissions; check the copy; a scheduler on
// the copy has every job acknowledged before the backup began.
TEST(SchedulerIntegrity, BackupWhileRunningThenCheckAndStartOnTheCopy) {
  testkit::TempDir dir("tessel-bin-backup");
  const std::string db = dir.str("s.db"), copy = dir.str("backup.db");
  Running s(dir, db, {"--log-level", "warn"});
  ASSERT_GT(s.port, 0) << s.child.stderr_text();
  testkit::RestClient api(s.port);
  std::set<std::string> before;
  for (int i = 0; i < 30; ++i) {
    auto r = api.post("/v1/jobs", {{"command", {"true"}}, {"name", "b" + std::to_string(i)}});
    ASSERT_EQ(r.status, 201) << r.text;
    before.insert(r.body["id"].get<std::string>());
  }
  std::atomic<bool> stop{false};
  std::thread more([&] {
    while (!stop) (void)api.post("/v1/jobs", {{"command", {"true"}}});
  });
  auto b = run({"backup", "--db", db, "--to", copy});
  stop = true;
  more.join();
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_TRUE(contains(b.out, "backed up " + db + " to " + copy + " (")) << b.out;
  EXPECT_TRUE(contains(b.out, "bytes, quick_check ok)")) << b.out;

  auto again = run({"backup", "--db", db, "--to", copy});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_TRUE(contains(again.err, "tessel-scheduler: backup: " + copy + " exists (--force replaces it)")) << again.err;
  EXPECT_EQ(run({"backup", "--db", db, "--to", copy, "--force"}).exit_code, 0);

  auto c = run({"check", "--db", copy});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(c.out, copy + ": ok (integrity_check)\n");
  c = run({"check", "--db", db, "--quick"});  // The live one, while it runs.
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(c.out, db + ": ok (quick_check)\n");

  Running on_copy(dir, copy, {"--log-level", "warn"});
  ASSERT_GT(on_copy.port, 0) << on_copy.child.stderr_text();
  auto restored = job_ids(testkit::RestClient(on_copy.port));
  for (const auto& id : before) EXPECT_TRUE(restored.count(id)) << id << " is not in the backup";
  auto r = testkit::RestClient(on_copy.port).post("/v1/jobs", {{"command", {"true"}}});
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_FALSE(restored.count(r.body["id"].get<std::string>())) << "job id reused";
}

TEST(SchedulerIntegrity, CheckReportsProblemsAndForeignFiles) {
  testkit::TempDir dir("tessel-bin-check");
  const std::string db = dir.str("s.db");
  make_database(db, 2244);
  corrupt_page(db, jobs_leaf_page(db));
  auto c = run({"check", "--db", db});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_TRUE(contains(c.out, db + ": corrupt (integrity_check found ")) << c.out;
  c = run({"check", "--db", dir.str("none.db")});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(c.err, "tessel-scheduler: check: database " + dir.str("none.db") + " does not exist\n");
  EXPECT_FALSE(fs::exists(dir.str("none.db")));
  testkit::write_file(dir.str("text.db"), "hello\n");
  c = run({"check", "--db", dir.str("text.db")});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_TRUE(contains(c.err, "is not a SQLite database")) << c.err;
}

// docs/operator-guide.md's restore: stop the scheduler, move the damaged file aside, delete its
// -wal and -shm, copy the backup in, start.
TEST(SchedulerIntegrity, RestoreFromABackupAfterCorruption) {
  testkit::TempDir dir("tessel-bin-restore");
  const std::string db = dir.str("s.db"), copy = dir.str("backup.db");
  std::set<std::string> acked;
  {
    Running s(dir, db, {"--log-level", "warn"});
    ASSERT_GT(s.port, 0) << s.child.stderr_text();
    testkit::RestClient api(s.port);
    for (int i = 0; i < 300; ++i) {
      auto r = api.post("/v1/jobs", {{"command", {"python3", "train.py", "--run", std::to_string(i)}}});
      ASSERT_EQ(r.status, 201) << r.text;
      acked.insert(r.body["id"].get<std::string>());
    }
    ASSERT_EQ(run({"backup", "--db", db, "--to", copy}).exit_code, 0);
    s.child.signal(SIGTERM);
    ASSERT_EQ(s.child.wait(), 0);
  }
  corrupt_page(db, jobs_leaf_page(db));
  Exit e = start_expecting_exit(dir, db);
  ASSERT_EQ(e.code, 2) << e.err;

  fs::rename(db, db + ".corrupt");
  fs::remove(db + "-wal");
  fs::remove(db + "-shm");
  fs::copy_file(copy, db);
  Running s(dir, db, {"--log-level", "warn"});
  ASSERT_GT(s.port, 0) << s.child.stderr_text();
  EXPECT_EQ(job_ids(testkit::RestClient(s.port)), acked);
}

TEST(SchedulerIntegrity, PeriodicBackupsWhileRunning) {
  testkit::TempDir dir("tessel-bin-periodic");
  const std::string db = dir.str("s.db"), out = dir.str("backups");
  Running s(dir, db, {"--backup-dir", out, "--backup-every", "1s", "--backup-keep", "2"});
  ASSERT_GT(s.port, 0) << s.child.stderr_text();
  testkit::RestClient api(s.port);
  auto r = api.post("/v1/jobs", {{"command", {"true"}}});
  ASSERT_EQ(r.status, 201) << r.text;
  const std::string id = r.body["id"];
  ASSERT_TRUE(eventually([&] { return contains(api.get("/metrics").text, "tessel_backups_total 3\n"); },
                         std::chrono::seconds(30)))
      << api.get("/metrics").text;
  EXPECT_TRUE(contains(api.get("/metrics").text, "tessel_backup_failures_total 0\n"));
  s.child.signal(SIGTERM);  // Cancels a backup under way, which leaves nothing behind.
  EXPECT_EQ(s.child.wait(), 0);
  EXPECT_TRUE(contains(s.log(), "backed up " + db + " to " + out + "/tessel-")) << s.log();
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(out)) files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u) << ::testing::PrintToString(files);  // --backup-keep 2.
  for (const auto& f : files) {
    EXPECT_TRUE(contains(f, out + "/tessel-") && f.size() > 3 && f.substr(f.size() - 4) == "Z.db") << f;
    auto c = run({"check", "--db", f});
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  }
  const std::string newest = files.back();
  Running on_backup(dir, newest, {"--log-level", "warn"});
  ASSERT_GT(on_backup.port, 0) << on_backup.child.stderr_text();
  EXPECT_EQ(testkit::RestClient(on_backup.port).job_state(id), "pending");
}

TEST(SchedulerIntegrity, BackupFlagsAreChecked) {
  testkit::TempDir dir("tessel-bin-flags");
  auto r =
      run({"--db", dir.str("s.db"), "--listen", "127.0.0.1:0", "--backup-dir", dir.str("b"), "--backup-every", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err,
                       "tessel-scheduler: --backup-every: expected a duration like 90s, 15m, 1h, 2d or 1h30m, "
                       "got 'soon'"))
      << r.err;
  r = run({"--db", dir.str("s.db"), "--listen", "127.0.0.1:0", "--backup-every", "1h"});
  EXPECT_NE(r.exit_code, 0);  // Needs --backup-dir.
  r = run({"backup", "--db", dir.str("s.db")});
  EXPECT_NE(r.exit_code, 0);  // Needs --to.
}

}  // namespace
}  // namespace tessel::scheduler::testing
