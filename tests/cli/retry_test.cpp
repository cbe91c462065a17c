// --retry: a GET whose connection fails is sent again after a growing pause, a POST
// never is; the last failure is one line that says how many times it was tried.
#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "fake_api_server.hpp"
#include "run_tessel.hpp"
#include "tessel/cli/api_client.hpp"

namespace tessel::cli::testing {
namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// A loopback port with nothing listening on it (a fake server's, closed again).
int unused_port() {
  FakeApiServer probe;
  return probe.port();
}

std::unique_ptr<ApiClient> client_for(int port) {
  auto c = ApiClient::create("http://127.0.0.1:" + std::to_string(port), "", 5s);
  EXPECT_TRUE(c.ok());
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(ApiClientRetry, AGetToNobodyFailsInOneLineAfterItsTries) {
  auto c = client_for(unused_port());
  ASSERT_TRUE(c);
  std::vector<milliseconds> pauses;
  c->set_retry(2, 200ms, [&](milliseconds d) { pauses.push_back(d); });
  auto r = c->get("/v1/jobs");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("; tried 3 times"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  EXPECT_EQ(pauses, (std::vector<milliseconds>{200ms, 400ms}));

  // Writes may have been applied: never sent twice.
  pauses.clear();
  EXPECT_FALSE(c->post("/v1/jobs", nlohmann::json::object()).ok());
  EXPECT_FALSE(c->del("/v1/jobs/j-1").ok());
  EXPECT_TRUE(pauses.empty());
}

TEST(ApiClientRetry, AGetSucceedsOnceTheServerAppears) {
  const int port = unused_port();
  auto c = client_for(port);
  ASSERT_TRUE(c);
  std::unique_ptr<FakeApiServer> server;
  int pauses = 0;
  c->set_retry(2, 200ms, [&](milliseconds) {
    ++pauses;
    server = std::make_unique<FakeApiServer>(port);  // Up by the time the pause ends.
    server->on("GET", "/v1/jobs", 200, "[]");
  });
  auto r = c->get("/v1/jobs");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, nlohmann::json::array());
  EXPECT_EQ(pauses, 1);
  ASSERT_TRUE(server);
  EXPECT_EQ(server->requests().size(), 1u);
}

TEST(ApiClientRetry, NoRetriesByDefault) {
  auto c = client_for(unused_port());
  ASSERT_TRUE(c);
  auto r = c->get("/v1/jobs");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.find("tried"), std::string::npos) << r.error().message;
}

TEST(CliRetry, TheBinaryGivesUpInOneLineAfterItsTries) {
  auto r = run_tessel({"--server", "http://127.0.0.1:" + std::to_string(unused_port()), "--retry", "1", "jobs"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("tessel: jobs: cannot reach http://127.0.0.1:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("; tried 2 times\n"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(run_tessel({"--retry", "11", "jobs"}).exit_code, 2);
  EXPECT_EQ(run_tessel({"--retry", "-1", "jobs"}).exit_code, 2);
}

}  // namespace
}  // namespace tessel::cli::testing
