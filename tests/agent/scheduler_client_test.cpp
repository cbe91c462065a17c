// The agent's SchedulerClient: how an HTTP answer becomes a tessel::Result. The status
// to ErrorCode table, the message taken from the API's error envelope, and the real
// client against a tessel::http::Server on loopback (an error status, a 2xx answer
// that does not parse, no answer at all, a bad URL).
#include "tessel/agent/scheduler_client.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tessel/http/server.hpp"

namespace tessel::agent {
namespace {

TEST(SchedulerClientErrors, MessageFromTheEnvelopeElseTheBody) {
  auto e = error_of_response(
      400,
      R"({"error":{"code":"invalid_argument","message":"inventory.devices: must be a list","field":"inventory"}})");
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_EQ(e.message, "HTTP 400: inventory.devices: must be a list");
  EXPECT_EQ(e.field, "inventory");

  auto unknown = error_of_response(404, R"({"error":{"code":"not_found","message":"unknown node n1"}})");
  EXPECT_EQ(unknown.code, ErrorCode::not_found);
  EXPECT_EQ(unknown.message, "HTTP 404: unknown node n1");
  EXPECT_EQ(unknown.field, "");

  auto proxy = error_of_response(502, "Bad Gateway");
  EXPECT_EQ(proxy.code, ErrorCode::internal);
  EXPECT_EQ(proxy.message, "HTTP 502: Bad Gateway");

  EXPECT_EQ(error_of_response(503, std::string(300, 'x')).message, "HTTP 503: " + std::string(200, 'x'));
  // An envelope of an odd shape is not a reason to throw.
  auto odd = error_of_response(409, R"({"error":{"message":5,"field":[]}})");
  EXPECT_EQ(odd.code, ErrorCode::conflict);
  EXPECT_EQ(odd.message, "HTTP 409: ");
  EXPECT_EQ(odd.field, "");
}

// A scheduler that answers every agent route with the response the test sets.
class SchedulerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http::Router r;
    auto answer = [this](http::Request&, const http::Reply& reply) {
      std::lock_guard lock(mu_);
      reply(next_);
    };
    r.add("POST", "/v1/agent/register", answer);
    r.add("POST", "/v1/agent/heartbeat", answer);
    r.add("POST", "/v1/agent/report", answer);
    r.add("GET", "/v1/agent/nodes/{node}/assignments", answer);
    http::ServerOptions o;
    o.io_threads = 1;
    server_ = std::make_unique<http::Server>(o, std::move(r));
    auto port = server_->start();
    ASSERT_TRUE(port.ok()) << port.error().message;
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  void TearDown() override { server_->stop(); }

  void answer(int status, std::string body) {
    std::lock_guard lock(mu_);
    next_ = http::json_response(status, std::move(body));
  }

  http::ClientLoop loop_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
  std::mutex mu_;
  http::Response next_;
};

TEST_F(SchedulerClientTest, AValueOnSuccess) {
  SchedulerClient c(loop_, url_, "");
  answer(200, R"({"heartbeat_interval_s":7})");
  auto r = c.register_node({"n1", "127.0.0.1", 7451, {}, {}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->heartbeat_interval_s, 7);
}

TEST_F(SchedulerClientTest, AnErrorStatusCarriesItsCodeAndMessage) {
  SchedulerClient c(loop_, url_, "");
  answer(404, R"({"error":{"code":"not_found","message":"node n1 is not registered"}})");
  auto hb = c.heartbeat({"n1", {}, std::nullopt});
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.error().code, ErrorCode::not_found);
  EXPECT_EQ(hb.error().message, "HTTP 404: node n1 is not registered");

  answer(503, R"({"error":{"code":"unavailable","message":"storage unavailable"}})");
  auto rep = c.report({"n1", {}});
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.error().code, ErrorCode::unavailable);
  EXPECT_EQ(rep.error().message, "HTTP 503: storage unavailable");

  answer(401, R"({"error":{"code":"unauthenticated","message":"unknown token"}})");
  auto poll = c.desired_state("n1", 0, 0);
  ASSERT_FALSE(poll.ok());
  EXPECT_EQ(poll.error().code, ErrorCode::unauthenticated);
  EXPECT_EQ(poll.error().message, "HTTP 401: unknown token");
}

TEST_F(SchedulerClientTest, AnUnreadableAnswerIsInternalNotNotFound) {
  SchedulerClient c(loop_, url_, "");
  answer(200, "not json");
  auto r = c.register_node({"n1", "127.0.0.1", 7451, {}, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::internal);
  EXPECT_EQ(r.error().message, "answer is not JSON");

  answer(200, R"({"heartbeat_interval_s":"soon"})");
  auto bad = c.register_node({"n1", "127.0.0.1", 7451, {}, {}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::internal);
}

// A loopback port bound but not listening: a connection to it is refused, and no other
// process can take the port while the socket is open (as it could a closed server's).
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port_ = ntohs(a.sin_port);
  }
  ~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  [[nodiscard]] int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST_F(SchedulerClientTest, NoAnswerIsUnavailable) {
  RefusingPort refusing;
  ASSERT_NE(refusing.port(), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(refusing.port());
  SchedulerClient c(loop_, url, "");
  auto r = c.heartbeat({"n1", {}, std::nullopt});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().message.rfind("no answer: ", 0), 0U) << r.error().message;

  SchedulerClient cancelled(loop_, url_, "");
  cancelled.cancel();
  auto after = cancelled.report({"n1", {}});
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::unavailable);
}

// Replicas: a dead one is left for the next after its failed call; a follower's 307
// is followed at once to the leader, where later calls go directly.
TEST_F(SchedulerClientTest, ReplicasADeadOneIsSkippedAndAFollowerNamesTheLeader) {
  std::atomic<int> follower_calls{0};
  http::Router r;
  const std::string leader = url_;
  auto redirect = [&](http::Request& req, const http::Reply& reply) {
    ++follower_calls;
    http::Response res = http::json_response(307, R"({"error":{"code":"unavailable","message":"not the leader"}})");
    res.headers.push_back({"Location", leader + req.target});
    reply(std::move(res));
  };
  r.add("POST", "/v1/agent/heartbeat", redirect);
  r.add("POST", "/v1/agent/report", redirect);
  http::ServerOptions o;
  o.io_threads = 1;
  http::Server follower(o, std::move(r));
  auto port = follower.start();
  ASSERT_TRUE(port.ok());
  RefusingPort dead;
  SchedulerClient c(
      loop_, "http://127.0.0.1:" + std::to_string(dead.port()) + ", http://127.0.0.1:" + std::to_string(*port), "tok");
  answer(200, R"({"heartbeat_interval_s":3})");
  auto first = c.heartbeat({"n1", {}, std::nullopt});
  ASSERT_FALSE(first.ok());  // The dead replica: the agent's loop retries.
  EXPECT_EQ(first.error().code, ErrorCode::unavailable);
  auto second = c.heartbeat({"n1", {}, std::nullopt});
  ASSERT_TRUE(second.ok()) << second.error().message;  // Follower, then leader.
  EXPECT_EQ(follower_calls, 1);
  answer(200, R"({"acknowledged":[]})");
  auto third = c.report({"n1", {}});
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(follower_calls, 1);  // Straight to the leader.
  follower.stop();
}

TEST(SchedulerClient, ABadUrlFailsEveryCallNamingIt) {
  http::ClientLoop loop;
  SchedulerClient c(loop, "ftp://sched", "");
  auto r = c.heartbeat({"n1", {}, std::nullopt});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().code, ErrorCode::not_found);
  EXPECT_NE(r.error().message.find("ftp://sched"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace tessel::agent
