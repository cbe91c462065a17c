// The real tessel-scheduler on a real PostgreSQL (--db postgresql://...): jobs
// acknowledged with 201 are there after a kill -9 and a restart; the password in
// the URI never reaches its output; backup and check point at PostgreSQL's tools.
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "binaries.hpp"
#include "postgres_server.hpp"
#include "rest_client.hpp"
#include "temp_dir.hpp"

namespace tessel::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PgBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testkit::PostgresServer::find_bindir()) GTEST_SKIP() << testkit::PostgresServer::skip_reason();
    pg_ = std::make_unique<testkit::PostgresServer>(/*fsync=*/false);  // The scheduler dies here, not the server.
  }
  testkit::Child start(const std::string& db, int& port) {
    testkit::SchedulerOptions o;
    o.bin = TESSEL_SCHEDULER_BIN;
    o.db = db;
    o.args = {"--log-level", "info"};
    o.stdout_path = dir_.str("scheduler.out");
    o.stderr_path = dir_.str("scheduler.err");
    auto c = testkit::start_scheduler(o);
    port = c.wait_listening();
    return c;
  }
  testkit::TempDir dir_{"tessel-pgbin"};
  std::unique_ptr<testkit::PostgresServer> pg_;
};

TEST_F(PgBinary, AcknowledgedJobsSurviveKill9AndRestart) {
  const std::string uri = pg_->create_database("sched");
  // trust authentication ignores the password; it is here to be kept out of the logs.
  const std::string with_password = "postgresql://tessel:s3cret-pw@127.0.0.1:" + std::to_string(pg_->port()) + "/sched";
  int port = 0;
  auto sched = start(with_password, port);
  ASSERT_GT(port, 0) << slurp(dir_.str("scheduler.err"));
  testkit::RestClient api(port);
  std::vector<std::string> acked;
  for (int i = 0; i < 5; ++i) {
    auto r = api.post("/v1/jobs", {{"command", {"true"}}, {"name", "pg-" + std::to_string(i)}});
    ASSERT_EQ(r.status, 201) << r.text;
    acked.push_back(r.body.at("id").get<std::string>());
  }
  sched.kill9();
  auto again = start(uri, port);
  ASSERT_GT(port, 0) << slurp(dir_.str("scheduler.err"));
  api.set_port(port);
  auto jobs = api.all_jobs();
  std::vector<std::string> found;
  for (const auto& j : jobs) found.push_back(j.at("id").get<std::string>());
  EXPECT_EQ(found.size(), acked.size());
  for (const auto& id : acked) EXPECT_NE(std::find(found.begin(), found.end(), id), found.end()) << id;
  // New jobs continue the sequence.
  auto r = api.post("/v1/jobs", {{"command", {"true"}}});
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_EQ(std::find(acked.begin(), acked.end(), r.body.at("id").get<std::string>()), acked.end());
  again.signal(SIGTERM);
  int st = again.wait();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  const std::string logs = slurp(dir_.str("scheduler.out")) + slurp(dir_.str("scheduler.err"));
  EXPECT_EQ(logs.find("s3cret-pw"), std::string::npos) << logs;
}

// The database goes away under a running scheduler: submissions answer 503, reads
// still answer from memory, and submissions succeed again once it is back.
TEST_F(PgBinary, RidesOutADatabaseRestart) {
  int port = 0;
  auto sched = start(pg_->create_database("ride"), port);
  ASSERT_GT(port, 0) << slurp(dir_.str("scheduler.err"));
  testkit::RestClient api(port);
  ASSERT_EQ(api.post("/v1/jobs", {{"command", {"true"}}}).status, 201);
  pg_->stop();
  auto down = api.post("/v1/jobs", {{"command", {"true"}}});
  EXPECT_EQ(down.status, 503) << down.text;
  EXPECT_EQ(api.get("/v1/jobs").status, 200);
  pg_->start();
  int status = 0;
  for (int i = 0; i < 200 && status != 201; ++i) {  // Each try is one request; the store reconnects on it.
    status = api.post("/v1/jobs", {{"command", {"true"}}}).status;
    if (status != 201) {
      ASSERT_EQ(status, 503);
    }
  }
  EXPECT_EQ(status, 201);
  EXPECT_EQ(api.all_jobs().size(), 2u);
}

TEST(PgBinaryCommands, BackupAndCheckPointAtPostgresTools) {
  for (const char* cmd : {"check", "backup"}) {
    std::vector<std::string> argv = {TESSEL_SCHEDULER_BIN, cmd, "--db", "postgresql://u:s3cret@127.0.0.1:1/db"};
    if (std::string(cmd) == "backup") argv.insert(argv.end(), {"--to", "/tmp/never-written.db"});
    auto r = testkit::run_process(testkit::command(argv));
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("pg_dump"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tessel::testing
