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

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

// A child tessel-scheduler whose stdout we read for "listening on HOST:PORT".
struct Proc {
  pid_t pid = -1;
  int port = 0;
  FILE* out = nullptr;

  // nofile_soft > 0: the child starts with that soft RLIMIT_NOFILE (as under systemd's 1,024);
  // nofile_hard > 0: and that hard one.
  explicit Proc(std::vector<std::string> args, rlim_t nofile_soft = 0, rlim_t nofile_hard = 0) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      rlimit lim{};
      if (nofile_soft > 0 && getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        if (nofile_hard > 0) lim.rlim_max = std::min(nofile_hard, lim.rlim_max);
        lim.rlim_cur = std::min(nofile_soft, lim.rlim_max);
        setrlimit(RLIMIT_NOFILE, &lim);
      }
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      static std::string bin = TESSEL_SCHEDULER_BIN;
      argv.push_back(bin.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    char line[256];
    if (fgets(line, sizeof line, out)) {
      std::string l(line);
      auto colon = l.rfind(':');
      if (l.rfind("listening on ", 0) == 0 && colon != std::string::npos) port = std::stoi(l.substr(colon + 1));
    }
  }
  int wait_exit() {
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return status;
  }
  ~Proc() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out) fclose(out);
  }
};

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("tessel-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

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
  auto dir = temp_dir("nofile");
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max <= 256) GTEST_SKIP() << "hard open-file limit " << lim.rlim_max << " leaves nothing to raise";
  Proc p({"--listen", "127.0.0.1:0", "--db", (dir / "s.db").string(), "--log-level", "warn"}, 256);
  ASSERT_GT(p.port, 0);
  auto [soft, hard] = open_files_limit(p.pid);
  const rlim_t want = std::min<rlim_t>(lim.rlim_max, rlim_t{1} << 20);
  EXPECT_EQ(soft, std::to_string(want)) << "hard " << hard;
}

// Past the open-file limit accept() would fail and clients would hang in the backlog:
// the default connection cap stays below it, so the next client gets a 503 at once.
TEST(SchedulerBinary, ConnectionCapFollowsTheOpenFileLimit) {
  auto dir = temp_dir("cap");
  Proc p({"--listen", "127.0.0.1:0", "--db", (dir / "s.db").string(), "--log-level", "warn"}, 300, 300);
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
  kill(p.pid, SIGTERM);
  p.wait_exit();
  std::filesystem::remove_all(dir);
}

TEST(SchedulerBinary, ServesOnPortZeroAndStopsOnSigterm) {
  auto dir = temp_dir("bin");
  Proc p({"--listen", "127.0.0.1:0", "--db", (dir / "s.db").string(), "--log-level", "warn"});
  ASSERT_GT(p.port, 0);
  httplib::Client c("127.0.0.1", p.port);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  auto r = c.Post("/v1/jobs", R"({"command":["true"]})", "application/json");
  ASSERT_EQ(r->status, 201);
  kill(p.pid, SIGTERM);
  int st = p.wait_exit();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  std::filesystem::remove_all(dir);
}

// A second scheduler must not share the first one's port (cpp-httplib's default
// SO_REUSEPORT allowed it) nor its database (both would place the same cards).
TEST(SchedulerBinary, SecondInstanceOnTheSamePortOrDatabaseIsRefused) {
  auto dir = temp_dir("second");
  Proc first({"--listen", "127.0.0.1:0", "--db", (dir / "a.db").string(), "--log-level", "warn"});
  ASSERT_GT(first.port, 0);
  {
    Proc same_port({"--listen", "127.0.0.1:" + std::to_string(first.port), "--db", (dir / "b.db").string()});
    int st = same_port.wait_exit();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << "second scheduler bound port " << first.port;
  }
  {
    Proc same_db({"--listen", "127.0.0.1:0", "--db", (dir / "a.db").string()});
    int st = same_db.wait_exit();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << "second scheduler opened the same database";
  }
  httplib::Client c("127.0.0.1", first.port);
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  kill(first.pid, SIGTERM);
  first.wait_exit();
  // Once the first has stopped, the database is free again.
  Proc again({"--listen", "127.0.0.1:0", "--db", (dir / "a.db").string(), "--log-level", "warn"});
  EXPECT_GT(again.port, 0);
  std::filesystem::remove_all(dir);
}

TEST(SchedulerBinary, RejectsBadStartup) {
  auto dir = temp_dir("badstart");
  std::ofstream(dir / "tokens") << "good admin root\nbad line\n";
  {
    Proc p({"--listen", "127.0.0.1:0", "--db", (dir / "s.db").string(), "--tokens", (dir / "tokens").string()});
    int st = p.wait_exit();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  }
  {
    Proc p({"--listen", "0.0.0.0:0", "--db", (dir / "s.db").string()});
    int st = p.wait_exit();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(SchedulerBinary, EveryAcknowledgedJobSurvivesKill9) {
  auto dir = temp_dir("durable");
  const std::string db = (dir / "s.db").string();
  std::set<std::string> acked;
  std::mutex mu;
  {
    Proc p({"--listen", "127.0.0.1:0", "--db", db, "--log-level", "warn"});
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
    kill(p.pid, SIGKILL);  // Mid-stream.
    p.wait_exit();
    stop = true;
    for (auto& t : clients) t.join();
  }
  Proc p({"--listen", "127.0.0.1:0", "--db", db, "--log-level", "warn"});
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
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessel::scheduler::testing
