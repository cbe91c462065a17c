// The agent's log server answers only the scheduler: the key from its last
// registration, and no other bearer token; past its connection cap, a 503 at once.
#include "tessel/agent/log_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "temp_dir.hpp"
#include "tessel/agent/launcher.hpp"

namespace tessel::agent {
namespace {

struct NoLauncher : TaskLauncher {
  Result<int> launch(const std::string&) override { return Error::internal("not in this test"); }
  Status stop(const SupervisorRecord&) override { return ok_status(); }
};

class LogServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir.init().ok());
    TaskManagerConfig cfg;
    cfg.node = "n1";
    tasks = std::make_unique<TaskManager>(dir, launcher, cfg);
    logs = std::make_unique<LogServer>(dir, *tasks);
    auto started = logs->start("127.0.0.1:0", max_connections);
    ASSERT_TRUE(started) << started.error().message;
    port = *started;
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
  }
  int get(const std::string& bearer, httplib::Client* via = nullptr) {
    httplib::Headers h;
    if (!bearer.empty()) h.emplace("Authorization", "Bearer " + bearer);
    auto r = (via ? via : client.get())->Get("/v1/tasks/j-00000001.0.0/logs", h);
    return r ? r->status : -1;
  }

  size_t max_connections = 4096;
  int port = 0;

  testkit::TempDir tmp{"tessel-log-server"};
  StateDir dir{tmp.str()};
  NoLauncher launcher;
  std::unique_ptr<TaskManager> tasks;
  std::unique_ptr<LogServer> logs;
  std::unique_ptr<httplib::Client> client;
};

TEST_F(LogServerTest, RefusesEveryoneBeforeTheFirstRegistration) {
  EXPECT_EQ(get(""), 503);
  EXPECT_EQ(get("anything"), 503);
}

TEST_F(LogServerTest, AcceptsOnlyTheLatestSchedulerKey) {
  const std::string first(64, 'a'), second(64, 'b');
  logs->set_scheduler_key(first);
  EXPECT_EQ(get(""), 401);
  EXPECT_EQ(get("node-token"), 401);
  EXPECT_EQ(get(first.substr(1)), 401);
  EXPECT_EQ(get(first), 404);  // Past the check: this node has no such task.
  logs->set_scheduler_key(second);
  EXPECT_EQ(get(first), 401);
  EXPECT_EQ(get(second), 404);
}

class CappedLogServerTest : public LogServerTest {
 protected:
  void SetUp() override {
    max_connections = 1;
    LogServerTest::SetUp();
  }
};

TEST_F(CappedLogServerTest, PastItsConnectionCapAReaderGetsA503AtOnce) {
  const std::string key(64, 'k');
  logs->set_scheduler_key(key);
  client->set_keep_alive(true);
  EXPECT_EQ(get(key), 404);  // Answered, and its connection stays open: the one allowed.
  httplib::Client second("127.0.0.1", port);
  EXPECT_EQ(get(key, &second), 503);
  client.reset();  // The first reader leaves: its place is free again (once the server sees it go).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while ((status = get(key, &second)) == 503 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(status, 404);
}

}  // namespace
}  // namespace tessel::agent
