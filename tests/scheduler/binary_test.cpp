// The real tessel-scheduler binary: port 0, flags, and durability across kill -9.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "binaries.hpp"
#include "harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

// A tessel-scheduler child on `listen` with its DB at `db` and further `args`, its
// stdout in `dir`, and the port it printed (0: it exited first). nofile_soft > 0:
// the child starts with that soft RLIMIT_NOFILE (as under systemd's 1,024);
// nofile_hard > 0: and that hard one.
struct Proc {
  Proc(const testkit::TempDir& dir, const std::string& listen, const std::string& db,
       std::vector<std::string> args = {}, rlim_t nofile_soft = 0, rlim_t nofile_hard = 0) {
    static int starts = 0;
    testkit::SchedulerOptions o;
    o.bin = TESSEL_SCHEDULER_BIN;
    o.listen = listen;
    o.db = db;
    o.args = std::move(args);
    o.stdout_path = dir.str("scheduler-" + std::to_string(starts++) + ".out");
    o.nofile_soft = nofile_soft;
    o.nofile_hard = nofile_hard;
    child = testkit::start_scheduler(o);
    port = child.wait_listening();
  }
  testkit::Child child;
  int port = 0;
};

// Soft and hard "Max open files" of a running process, from /proc/PID/limits.
std::pair<std::string, std::string> open_files_limit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream cols(line.substr(14));
    std::string soft, hard;
    cols >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// Each agent holds a connection: started with a soft limit of 256 open files, the
// scheduler raises it to the hard limit (capped at 2^20) before serving.
TEST(SchedulerBinary, RaisesItsOpenFileLimitToTheHardLimit) {
  testkit::TempDir dir("tessel-nofile");
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max <= 256) GTEST_SKIP() << "hard open-file limit " << lim.rlim_max << " leaves nothing to raise";
  Proc p(dir, "127.0.0.1:0", dir.str("s.db"), {"--log-level", "warn"}, 256);
  ASSERT_GT(p.port, 0);
  auto [soft, hard] = open_files_limit(p.child.pid());
  const rlim_t want = std::min<rlim_t>(lim.rlim_max, rlim_t{1} << 20);
  EXPECT_EQ(soft, std::to_string(want)) << "hard " << hard;
}

// Past the open-file limit accept() would fail and clients would hang in the backlog:
// the default connection cap stays below it, so the next client gets a 503 at once.
TEST(SchedulerBinary, ConnectionCapFollowsTheOpenFileLimit) {
  testkit::TempDir dir("tessel-cap");
  Proc p(dir, "127.0.0.1:0", dir.str("s.db"), {"--log-level", "warn"}, 300, 300);
  ASSERT_GT(p.port, 0);  // A hard limit of 300 leaves 150 connections.
  std::vector<std::unique_ptr<httplib::Client>> held;
  for (int i = 0; i < 150; ++i) {
    held.push_back(std::make_unique<httplib::Client>("127.0.0.1", p.port));
    held.back()->set_keep_alive(true);
    auto r = held.back()->Get("/healthz");
    ASSERT_TRUE(r) << "connection " << i;
    ASSERT_EQ(r->status, 200) << "connection " << i;
  }
  httplib::Client extra("127.0.0.1", p.port);
  auto r = extra.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  held.clear();
  p.child.signal(SIGTERM);
  p.child.wait();
}

TEST(SchedulerBinary, ServesOnPortZeroAndStopsOnSigterm) {
  testkit::TempDir dir("tessel-bin");
  Proc p(dir, "127.0.0.1:0", dir.str("s.db"), {"--log-level", "warn"});
  ASSERT_GT(p.port, 0);
  httplib::Client c("127.0.0.1", p.port);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  auto r = c.Post("/v1/jobs", R"({"command":["true"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  p.child.signal(SIGTERM);
  int st = p.child.wait();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

// A second scheduler must not share the first one's port (cpp-httplib's default
// SO_REUSEPORT allowed it) nor its database (both would place the same cards).
TEST(SchedulerBinary, SecondInstanceOnTheSamePortOrDatabaseIsRefused) {
  testkit::TempDir dir("tessel-second");
  Proc first(dir, "127.0.0.1:0", dir.str("a.db"), {"--log-level", "warn"});
  ASSERT_GT(first.port, 0);
  {
    Proc same_port(dir, "127.0.0.1:" + std::to_string(first.port), dir.str("b.db"));
    int st = same_port.child.wait();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << "second scheduler bound port " << first.port;
  }
  {
    Proc same_db(dir, "127.0.0.1:0", dir.str("a.db"));
    int st = same_db.child.wait();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << "second scheduler opened the same database";
  }
  httplib::Client c("127.0.0.1", first.port);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  first.child.signal(SIGTERM);
  first.child.wait();
  // Once the first has stopped, the database is free again.
  Proc again(dir, "127.0.0.1:0", dir.str("a.db"), {"--log-level", "warn"});
  EXPECT_GT(again.port, 0);
}

TEST(SchedulerBinary, RejectsBadStartup) {
  testkit::TempDir dir("tessel-badstart");
  std::ofstream(dir.path() / "tokens") << "good admin root\nbad line\n";
  {
    Proc p(dir, "127.0.0.1:0", dir.str("s.db"), {"--tokens", dir.str("tokens")});
    int st = p.child.wait();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  }
  {
    Proc p(dir, "0.0.0.0:0", dir.str("s.db"));
    int st = p.child.wait();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  }
}

TEST(SchedulerBinary, EveryAcknowledgedJobSurvivesKill9) {
  testkit::TempDir dir("tessel-durable");
  const std::string db = dir.str("s.db");
  std::set<std::string> acked;
  std::mutex mu;
  {
    Proc p(dir, "127.0.0.1:0", db, {"--log-level", "warn"});
    ASSERT_GT(p.port, 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t) {
      clients.emplace_back([&] {
        httplib::Client c("127.0.0.1", p.port);
        while (!stop) {
          auto r = c.Post("/v1/jobs", R"({"command":["true"]})", "application/json");
          if (!r) break;  // Server gone.
          if (r->status == 201) {
            std::lock_guard lk(mu);
            acked.insert(json::parse(r->body)["id"].get<std::string>());
          }
        }
      });
    }
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lk(mu);
      return acked.size() >= 300;
    }));
    p.child.signal(SIGKILL);  // Mid-stream.
    p.child.wait();
    stop = true;
    for (auto& t : clients) t.join();
  }
  Proc p(dir, "127.0.0.1:0", db, {"--log-level", "warn"});
  ASSERT_GT(p.port, 0);
  httplib::Client c("127.0.0.1", p.port);
  std::set<std::string> found;
  std::string after;
  for (;;) {
    auto r = c.Get(("/v1/jobs?limit=1000" + (after.empty() ? "" : "&after=" + after)).c_str());
    ASSERT_EQ(r->status, 200);
    auto j = json::parse(r->body);
    for (const auto& job : j["jobs"]) found.insert(job["id"].get<std::string>());
    if (!j.contains("next")) break;
    after = j["next"];
  }
  for (const auto& id : acked) EXPECT_TRUE(found.count(id)) << "lost acknowledged job " << id;
}

}  // namespace
}  // namespace tessel::scheduler::testing
