// tessel::http::Client against a tessel::http::Server on loopback: calls over one
// kept-alive connection, reconnecting after the server closed an idle one, the call
// deadline, cancel, an unreachable port, URL parsing.
#include "tessel/http/client.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>

#include "eventually.hpp"
#include "tessel/http/server.hpp"

namespace tessel::http {
namespace {

using namespace std::chrono_literals;

using testkit::eventually;

class ClientTest : public ::testing::Test {
 protected:
  void start(Limits limits = {}) {
    Router r;
    r.add("GET", "/a", [](Request&, Reply reply) { reply(Response{200, "text/plain", "a", {}, false, {}}); });
    r.add("POST", "/echo", [](Request& req, Reply reply) {
      reply(Response{201, "application/json", req.body + "|" + req.header("Authorization"), {}, false, {}});
    });
    r.add("GET", "/held", [this](Request&, Reply reply) {
      std::lock_guard lock(mu_);
      held_.push_back(std::move(reply));
    });
    ServerOptions o;
    o.io_threads = 1;
    o.limits = limits;
    server_ = std::make_unique<Server>(o, std::move(r));
    auto port = server_->start();
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }
  void TearDown() override {
    {
      std::lock_guard lock(mu_);
      held_.clear();
    }
    if (server_) server_->stop();
  }

  ClientLoop loop_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Reply> held_;
};

TEST_F(ClientTest, CallsShareOneKeptAliveConnection) {
  start();
  ClientOptions o;
  o.headers.push_back({"Authorization", "Bearer t"});
  Client c(loop_, "127.0.0.1", port_, o);
  auto a = c.call("GET", "/a", "", 5s);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, "a");
  EXPECT_EQ(a->content_type, "text/plain");
  auto e = c.call("POST", "/echo", "{\"x\":1}", 5s);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->status, 201);
  EXPECT_EQ(e->body, "{\"x\":1}|Bearer t");
  auto missing = c.call("GET", "/nope", "", 5s);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(server_->stats().connections_total, 1u);
}

TEST_F(ClientTest, WithoutKeepAliveEachCallHasItsOwnConnection) {
  start();
  ClientOptions o;
  o.keep_alive = false;
  Client c(loop_, "127.0.0.1", port_, o);
  ASSERT_TRUE(c.call("GET", "/a", "", 5s).ok());
  ASSERT_TRUE(c.call("GET", "/a", "", 5s).ok());
  EXPECT_EQ(server_->stats().connections_total, 2u);
  EXPECT_TRUE(eventually([&] { return server_->stats().connections_open == 0; }));
}

TEST_F(ClientTest, ReconnectsWhenTheServerClosedTheIdleConnection) {
  Limits l;
  l.idle_timeout = 50ms;
  start(l);
  Client c(loop_, "127.0.0.1", port_);
  ASSERT_TRUE(c.call("GET", "/a", "", 5s).ok());
  ASSERT_TRUE(eventually([&] { return server_->stats().connections_open == 0; }));
  auto again = c.call("GET", "/a", "", 5s);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->body, "a");
  EXPECT_EQ(server_->stats().connections_total, 2u);
}

TEST_F(ClientTest, AnAnswerPastTheDeadlineFailsAsUnavailable) {
  start();
  Client c(loop_, "127.0.0.1", port_);
  auto r = c.call("GET", "/held", "", 100ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  // The client is usable again: a new connection.
  EXPECT_TRUE(c.call("GET", "/a", "", 5s).ok());
}

TEST_F(ClientTest, CancelFailsTheCallInFlightAndEveryLaterOne) {
  start();
  Client c(loop_, "127.0.0.1", port_);
  std::promise<Result<ClientResponse>> got;
  c.call_async("GET", "/held", "", 60s, [&](Result<ClientResponse> r) { got.set_value(std::move(r)); });
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu_);
    return held_.size() == 1;
  }));
  c.cancel();
  auto r = got.get_future().get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cancelled"), std::string::npos) << r.error().message;
  auto later = c.call("GET", "/a", "", 5s);
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().message.find("cancelled"), std::string::npos);
}

TEST_F(ClientTest, AClosedPortFailsAsUnavailableNamingTheAddress) {
  start();
  const int port = port_;
  server_->stop();
  server_.reset();
  Client c(loop_, "127.0.0.1", port);
  auto r = c.call("GET", "/a", "", 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.error().message;
}

TEST_F(ClientTest, ABlockingCallFromTheLoopThreadIsRefused) {
  start();
  Client c(loop_, "127.0.0.1", port_);
  Client inner(loop_, "127.0.0.1", port_);
  std::promise<Result<ClientResponse>> got;
  c.call_async("GET", "/a", "", 5s, [&](Result<ClientResponse>) { got.set_value(inner.call("GET", "/a", "", 5s)); });
  auto r = got.get_future().get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::internal);
}

TEST(ParseHttpUrl, AcceptsHostAndPortOnly) {
  auto ok = parse_http_url("http://sched:7450");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "sched");
  EXPECT_EQ(ok->second, 7450);
  auto slash = parse_http_url("http://127.0.0.1:1/");
  ASSERT_TRUE(slash.ok());
  EXPECT_EQ(slash->first, "127.0.0.1");
  auto v6 = parse_http_url("http://[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  for (const char* bad : {"sched:7450", "https://sched:7450", "http://sched", "http://sched:", "http://sched:0",
                          "http://sched:70000", "http://sched:12a", "http://sched:7450/v1", "http://:80", ""}) {
    auto r = parse_http_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument) << bad;
    EXPECT_EQ(r.error().field, "url");
  }
}

}  // namespace
}  // namespace tessel::http
