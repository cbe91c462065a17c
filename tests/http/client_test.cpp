// tessel::http::Client against a tessel::http::Server on loopback: calls over one
// kept-alive connection, reconnecting after the server closed an idle one, the call
// deadline, cancel, an unreachable port, URL parsing; https against a TLS server.
#include "tessel/http/client.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <future>
#include <mutex>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "eventually.hpp"
#include "temp_dir.hpp"
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

TEST(ParseHttpUrl, AcceptsSchemeHostAndPortOnly) {
  auto ok = parse_http_url("http://sched:7450");
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(ok->tls);
  EXPECT_EQ(ok->host, "sched");
  EXPECT_EQ(ok->port, 7450);
  auto slash = parse_http_url("http://127.0.0.1:1/");
  ASSERT_TRUE(slash.ok());
  EXPECT_EQ(slash->host, "127.0.0.1");
  auto v6 = parse_http_url("http://[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  auto plain_default = parse_http_url("http://sched");
  ASSERT_TRUE(plain_default.ok());
  EXPECT_EQ(plain_default->port, 80);
  auto tls = parse_http_url("https://sched.example.com/");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "sched.example.com");
  EXPECT_EQ(tls->port, 443);
  for (const char* bad :
       {"sched:7450", "ftp://sched:7450", "http://sched:", "http://sched:0", "http://sched:70000", "http://sched:12a",
        "http://sched:7450/v1", "http://:80", "http://u@sched:80", "http://[::1", "http://[::1]x", "https://", ""}) {
    auto r = parse_http_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument) << bad;
    EXPECT_EQ(r.error().field, "url");
  }
}

// TLS against a small Asio TLS server on loopback, with a certificate made for the test.
class TlsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A self-signed certificate for the name localhost only (not for 127.0.0.1).
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
        "subjectAltName=DNS:localhost -keyout " +
        dir_.str("key.pem") + " -out " + dir_.str("cert.pem") + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl failed: " << cmd;
    server_ctx_.use_certificate_chain_file(dir_.str("cert.pem"));
    server_ctx_.use_private_key_file(dir_.str("key.pem"), boost::asio::ssl::context::pem);
    acceptor_.open(boost::asio::ip::tcp::v4());
    acceptor_.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  void TearDown() override {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }
  // Answers every request on every connection with "tls-ok" until stopped.
  void serve() {
    accept();
    ioc_.run();
  }
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket sock) {
      if (ec) return;
      auto s = std::make_shared<boost::beast::ssl_stream<boost::beast::tcp_stream>>(std::move(sock), server_ctx_);
      s->async_handshake(boost::asio::ssl::stream_base::server, [this, s](boost::system::error_code ec) {
        if (!ec) read(s);
      });
      accept();
    });
  }
  void read(std::shared_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> s) {
    auto buf = std::make_shared<boost::beast::flat_buffer>();
    auto req = std::make_shared<boost::beast::http::request<boost::beast::http::string_body>>();
    boost::beast::http::async_read(*s, *buf, *req, [this, s, buf, req](boost::system::error_code ec, size_t) {
      if (ec) return;
      auto res = std::make_shared<boost::beast::http::response<boost::beast::http::string_body>>(
          boost::beast::http::status::ok, 11);
      res->body() = "tls-ok " + std::string(req->target());
      res->prepare_payload();
      boost::beast::http::async_write(*s, *res, [this, s, res](boost::system::error_code ec, size_t) {
        if (!ec) read(s);
      });
    });
  }

  testkit::TempDir dir_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context server_ctx_{boost::asio::ssl::context::tls_server};
  boost::asio::ip::tcp::acceptor acceptor_{ioc_};
  int port_ = 0;
  std::thread thread_;
  ClientLoop loop_;
};

TEST_F(TlsClientTest, HttpsWithATrustedCertificateForTheHost) {
  ClientOptions o;
  o.tls = true;
  o.ca_file = dir_.str("cert.pem");
  Client c(loop_, "localhost", port_, o);
  auto a = c.call("GET", "/one", "", 10s);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, "tls-ok /one");
  auto b = c.call("POST", "/two", "{}", 10s);  // Same connection.
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->body, "tls-ok /two");
}

TEST_F(TlsClientTest, AnUntrustedCertificateFailsTheHandshake) {
  ClientOptions o;
  o.tls = true;  // The system's CAs do not know the test's certificate.
  Client c(loop_, "localhost", port_, o);
  auto r = c.call("GET", "/", "", 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("TLS handshake"), std::string::npos) << r.error().message;
}

TEST_F(TlsClientTest, ACertificateForAnotherNameFailsTheHandshake) {
  ClientOptions o;
  o.tls = true;
  o.ca_file = dir_.str("cert.pem");
  Client c(loop_, "127.0.0.1", port_, o);  // The server, but not a name its certificate holds.
  auto r = c.call("GET", "/", "", 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("TLS handshake"), std::string::npos) << r.error().message;
}

TEST_F(TlsClientTest, AMissingCaFileFailsEveryCallNamingIt) {
  ClientOptions o;
  o.tls = true;
  ClientOptions missing = o;
  missing.ca_file = dir_.str("nope.pem");
  Client no_ca(loop_, "localhost", port_, missing);
  auto n = no_ca.call("GET", "/", "", 10s);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("loading CA certificates"), std::string::npos) << n.error().message;
}

}  // namespace
}  // namespace tessel::http
