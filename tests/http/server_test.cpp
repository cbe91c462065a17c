// tessel::http::Server against raw sockets on loopback: every limit (head and
// idle timeouts, 431, 413, connection cap, requests per connection), RFC 9112
// framing (bodyless POST, chunked bodies, HTTP/1.0, pipelining, smuggling shapes,
// 100-continue), replies from other threads, dropped replies and streamed bodies.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <future>
#include <thread>
#include <vector>

#include "tessel/http/server.hpp"

namespace tessel::http {
namespace {

using namespace std::chrono_literals;

// A blocking loopback client socket.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Raw() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool send(const std::string& s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
  // Reads until the peer closes or `timeout` passes; `closed` says which.
  std::string read_all(std::chrono::milliseconds timeout, bool* closed = nullptr) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    if (closed) *closed = false;
    return out;
  }
  // Reads until `needle` has appeared `count` times (or the timeout).
  std::string read_until(const std::string& needle, int count, std::chrono::milliseconds timeout = 10s) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto seen = [&] {
      int c = 0;
      for (size_t at = out.find(needle); at != std::string::npos; at = out.find(needle, at + 1)) ++c;
      return c;
    };
    while (seen() < count && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

int count(const std::string& hay, const std::string& needle) {
  int c = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++c;
  return c;
}

struct TestServer {
  explicit TestServer(Limits limits = {}) {
    Router r;
    // Echoes the body's size and the method.
    r.add("POST", "/echo", [](Request& req, Reply reply) {
      reply(
          json_response(200, R"({"method":")" + req.method + R"(","bytes":)" + std::to_string(req.body.size()) + "}"));
    });
    r.add("GET", "/items/{id}", [](Request& req, Reply reply) {
      reply(json_response(200, R"({"id":")" + req.captures[0] + R"(","q":")" + req.param("q") + "\"}"));
    });
    // Answers later, from a timer (as a long poll does), and from another thread.
    r.add("GET", "/later", [this](Request&, Reply reply) {
      server->after(20ms, [reply] { reply(json_response(200, R"({"later":true})")); });
    });
    r.add("GET", "/thread", [](Request&, Reply reply) {
      std::thread([reply] { reply(json_response(200, R"({"thread":true})")); }).detach();
    });
    r.add("GET", "/dropped", [](Request&, Reply) {});
    r.add("GET", "/error", [](Request&, Reply reply) { reply(Error::invalid("x: bad", "x")); });
    r.add("GET", "/stream", [](Request&, Reply reply) {
      Response res;
      res.content_type = "text/plain";
      res.stream = [](std::shared_ptr<BodyStream> out) {
        out->write("hello ", [out](bool ok) {
          if (!ok) return;
          out->write("world", [out](bool) { out->finish(); });
        });
      };
      reply(std::move(res));
    });
    // Streams nothing until its client leaves, and tells when that is.
    r.add("GET", "/silent", [this](Request&, Reply reply) {
      Response res;
      res.content_type = "text/plain";
      res.stream = [this](std::shared_ptr<BodyStream> out) {
        out->on_close([this, out] { left.set_value(out->open()); });
        out->write("started\n", [](bool) {});
      };
      reply(std::move(res));
    });
    // Answers only when the test says (a long computation), and tells when its client left.
    r.add("GET", "/pending", [this](Request&, Reply reply) {
      reply.on_client_gone([this, reply] { gone.set_value(reply.client_gone()); });
      pending = reply;
      pending_in.set_value();
    });
    // Watches for its client, but answers soon: the watch ends with the answer.
    r.add("GET", "/watched", [this](Request&, Reply reply) {
      reply.on_client_gone([this] { ++gone_calls; });
      server->after(20ms, [reply] { reply(json_response(200, R"({"watched":true})")); });
    });
    r.add(
        "POST", "/blocking", [](Request&, Reply reply) { reply(json_response(200, "{}")); }, Exec::blocking);
    ServerOptions o;
    o.port = 0;
    o.io_threads = 2;
    o.limits = limits;
    server = std::make_unique<Server>(o, std::move(r));
    auto p = server->start();
    EXPECT_TRUE(p.ok());
    port = p.ok() ? *p : 0;
  }
  std::unique_ptr<Server> server;
  int port = 0;
  std::promise<bool> left;  // /silent's client left: whether its stream still said open.
  std::promise<bool> gone;  // /pending's client left: whether its Reply said so.
  std::promise<void> pending_in;
  Reply pending;
  std::atomic<int> gone_calls{0};
};

TEST(HttpServer, BodylessPostIsAnEmptyBody) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const auto out = c.read_all(10s);
  EXPECT_NE(out.find("HTTP/1.1 200"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bytes":0)"), std::string::npos) << out;
}

TEST(HttpServer, ChunkedRequestBodyIsRead) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
             "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  const auto out = c.read_all(10s);
  EXPECT_NE(out.find(R"("bytes":11)"), std::string::npos) << out;
}

TEST(HttpServer, Http10IsAnsweredAsHttp10AndClosed) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /items/7 HTTP/1.0\r\n\r\n"));
  bool closed = false;
  const auto out = c.read_all(10s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(out.rfind("HTTP/1.0 200", 0), 0u) << out;
  EXPECT_NE(out.find(R"("id":"7")"), std::string::npos) << out;
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(
      c.send("GET /later HTTP/1.1\r\nHost: x\r\n\r\nGET /thread HTTP/1.1\r\nHost: x\r\n\r\n"
             "GET /items/a%2Fb?q=x%20y HTTP/1.1\r\nHost: x\r\n\r\n"
             "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"));
  const auto out = c.read_all(10s);
  const auto a = out.find(R"({"later":true})"), t = out.find(R"({"thread":true})"),
             b = out.find(R"({"id":"a/b","q":"x y"})"), d = out.find(R"("bytes":3)");
  ASSERT_NE(a, std::string::npos) << out;
  ASSERT_NE(t, std::string::npos) << out;
  ASSERT_NE(b, std::string::npos) << out;
  ASSERT_NE(d, std::string::npos) << out;
  EXPECT_LT(a, t);
  EXPECT_LT(t, b);
  EXPECT_LT(b, d);
}

TEST(HttpServer, SlowHeadIsClosedAtTheHeadTimeout) {
  Limits lim;
  lim.head_timeout = 300ms;
  TestServer s(lim);
  Raw slow(s.port);
  ASSERT_TRUE(slow.send("GET /items/1 HTTP/1.1\r\nHo"));  // ... and nothing more.
  bool closed = false;
  slow.read_all(10s, &closed);
  EXPECT_TRUE(closed);
  // The stream closes the socket when its timer fires; the count follows a moment later.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (s.server->stats().timeouts < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(s.server->stats().timeouts, 1u);
  // Meanwhile others are served.
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /items/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_NE(c.read_all(10s).find("200 OK"), std::string::npos);
}

TEST(HttpServer, IdleKeepAliveIsClosedAtTheIdleTimeout) {
  Limits lim;
  lim.idle_timeout = 300ms;
  TestServer s(lim);
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const auto out = c.read_all(10s, &closed);
  EXPECT_NE(out.find("200 OK"), std::string::npos);
  EXPECT_TRUE(closed);
}

TEST(HttpServer, OversizedHeadIs431) {
  Limits lim;
  lim.max_head_bytes = 2048;
  TestServer s(lim);
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n"));
  const auto out = c.read_all(10s);
  EXPECT_EQ(out.rfind("HTTP/1.1 431", 0), 0u) << out.substr(0, 200);
  EXPECT_NE(
      out.find(R"({"error":{"code":"request_header_fields_too_large","message":"request head exceeds 2048 bytes"}})"),
      std::string::npos)
      << out.substr(0, 400);
}

TEST(HttpServer, OversizedBodyIs413WhileTheClientStillSends) {
  Limits lim;
  lim.max_body_bytes = 1024;
  TestServer s(lim);
  Raw c(s.port);
  // Announced too large: answered from the head, and the answer survives the upload.
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"));
  c.send(std::string(100000, 'a'));
  EXPECT_EQ(c.read_all(10s).rfind("HTTP/1.1 413", 0), 0u);
  // Chunked past the limit.
  Raw d(s.port);
  ASSERT_TRUE(d.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
                     std::string(0x800, 'b') + "\r\n0\r\n\r\n"));
  EXPECT_EQ(d.read_all(10s).rfind("HTTP/1.1 413", 0), 0u);
}

TEST(HttpServer, SmugglingShapesAre400) {
  TestServer s;
  Raw a(s.port);
  ASSERT_TRUE(a.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"));
  EXPECT_EQ(a.read_all(10s).rfind("HTTP/1.1 400", 0), 0u);
  Raw b(s.port);
  ASSERT_TRUE(
      b.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  EXPECT_EQ(b.read_all(10s).rfind("HTTP/1.1 400", 0), 0u);
}

// A body framed any other way than by `chunked` alone, a bad chunk size or a
// missing Host: one 400, then the connection closes, so the rest of the bytes (here
// a whole second request) is never read as a request of its own (RFC 9112 6.3).
TEST(HttpServer, FramingErrorsAre400AndCloseTheConnection) {
  TestServer s;
  const std::string smuggled = "GET /items/9 HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::vector<std::string> heads = {
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "GET /items/1 HTTP/1.1\r\n\r\n",
      "GET /items/1 HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
  };
  for (const auto& head : heads) {
    Raw c(s.port);
    ASSERT_TRUE(c.send(head + smuggled));
    bool closed = false;
    const std::string out = c.read_all(10s, &closed);
    EXPECT_EQ(out.rfind("HTTP/1.", 0), 0u) << head;
    EXPECT_NE(out.find(" 400 "), std::string::npos) << head << out;
    EXPECT_EQ(count(out, "\r\nContent-Length: "), 1) << "a second answer to " << head << out;
    EXPECT_TRUE(closed) << head;
  }
  // What stays accepted: chunked in any case with spaces around, HTTP/1.0 without Host.
  Raw ok(s.port);
  ASSERT_TRUE(
      ok.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\nConnection: close\r\n\r\n"
              "3\r\nabc\r\n0\r\n\r\n"));
  EXPECT_EQ(ok.read_all(10s).rfind("HTTP/1.1 200", 0), 0u);
}

TEST(HttpServer, ExpectContinueIsHonoured) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\nConnection: "
             "close\r\n\r\n"));
  EXPECT_NE(c.read_until("100 Continue", 1).find("HTTP/1.1 100 Continue"), std::string::npos);
  ASSERT_TRUE(c.send("abcd"));
  EXPECT_NE(c.read_all(10s).find(R"("bytes":4)"), std::string::npos);
}

TEST(HttpServer, ConnectionsPastTheCapGet503AtOnce) {
  Limits lim;
  lim.max_connections = 2;
  TestServer s(lim);
  Raw a(s.port), b(s.port);
  // Both are accepted once they are served.
  ASSERT_TRUE(a.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(b.send("GET /items/2 HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(a.read_until("}", 1).find("200 OK"), std::string::npos);
  EXPECT_NE(b.read_until("}", 1).find("200 OK"), std::string::npos);
  Raw c(s.port);
  bool closed = false;
  const auto out = c.read_all(10s, &closed);
  EXPECT_EQ(out.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("\r\n\r\n"
                     R"({"error":{"code":"unavailable","message":"too many open connections; retry later"}})"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Retry-After: 1\r\n"), std::string::npos) << out;
  EXPECT_TRUE(closed);
  EXPECT_EQ(s.server->stats().connections_rejected, 1u);
}

TEST(HttpServer, RequestsPerConnectionAreCapped) {
  Limits lim;
  lim.max_requests_per_connection = 2;
  TestServer s(lim);
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /items/2 HTTP/1.1\r\nHost: x\r\n\r\n"));
  bool closed = false;
  const auto out = c.read_all(10s, &closed);
  EXPECT_EQ(count(out, "200 OK"), 2);
  EXPECT_NE(out.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(closed);
}

TEST(HttpServer, RoutingErrorsAndTypedErrorsAreJson) {
  TestServer s;
  Raw a(s.port);
  ASSERT_TRUE(
      a.send("GET /nope HTTP/1.1\r\nHost: x\r\n\r\nDELETE /echo HTTP/1.1\r\nHost: x\r\n\r\n"
             "GET /error HTTP/1.1\r\nHost: x\r\n\r\nGET /dropped HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const auto out = a.read_all(10s);
  EXPECT_NE(out.find("HTTP/1.1 404"), std::string::npos) << out;
  EXPECT_NE(out.find(R"({"error":{"code":"not_found","message":"no such endpoint: GET /nope"}})"), std::string::npos)
      << out;
  EXPECT_NE(out.find("HTTP/1.1 405"), std::string::npos) << out;
  EXPECT_NE(out.find(R"({"error":{"code":"method_not_allowed","message":"method DELETE not allowed on /echo"}})"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"({"error":{"code":"invalid_argument","field":"x","message":"x: bad"}})"), std::string::npos)
      << out;
  EXPECT_NE(out.find("HTTP/1.1 500"), std::string::npos) << out;  // The dropped reply.
  EXPECT_NE(out.find(R"({"error":{"code":"internal","message":"the handler dropped the request"}})"), std::string::npos)
      << out;
}

TEST(HttpServer, StreamedBodyIsChunked) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const auto out = c.read_all(10s);
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"), std::string::npos) << out;
  Raw old(s.port);
  ASSERT_TRUE(old.send("GET /stream HTTP/1.0\r\n\r\n"));
  const auto out10 = old.read_all(10s);
  EXPECT_NE(out10.find("\r\n\r\nhello world"), std::string::npos) << out10;
}

// A client that leaves a streamed answer while nothing is written is seen at once:
// the producer's on_close runs and the stream is no longer open.
TEST(HttpServer, AStreamsProducerHearsAtOnceThatItsClientLeft) {
  TestServer s;
  auto left = s.left.get_future();
  {
    Raw c(s.port);
    ASSERT_TRUE(c.send("GET /silent HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_NE(c.read_until("started", 1).find("started"), std::string::npos);
  }
  ASSERT_EQ(left.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(left.get());
  // The server serves on.
  Raw d(s.port);
  ASSERT_TRUE(d.send("GET /items/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(d.read_all(10s).rfind("HTTP/1.1 200", 0), 0u);
}

// A handler that answers late hears at once that its client left (a non-streamed
// answer that takes long: the computation stops), and its late answer is dropped.
TEST(HttpServer, AHandlerHearsThatItsClientLeftBeforeItAnswered) {
  TestServer s;
  auto gone = s.gone.get_future();
  auto in = s.pending_in.get_future();
  {
    Raw c(s.port);
    ASSERT_TRUE(c.send("GET /pending HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(in.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(s.pending.client_gone());
  }
  ASSERT_EQ(gone.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(gone.get());
  EXPECT_TRUE(s.pending.client_gone());
  s.pending(json_response(200, "{}"));  // Dropped: the connection is closed.
  Raw d(s.port);
  ASSERT_TRUE(d.send("GET /items/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(d.read_all(10s).rfind("HTTP/1.1 200", 0), 0u);
}

// A client that sends its request and leaves at once, before the handler ran, is
// seen too (its end closed before the watch began).
TEST(HttpServer, AHandlerHearsOfAClientThatLeftBeforeTheWatchBegan) {
  TestServer s;
  auto gone = s.gone.get_future();
  {
    Raw c(s.port);
    ASSERT_TRUE(c.send("GET /pending HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  ASSERT_EQ(gone.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(gone.get());
}

// Once answered, a watched request is not watched any more: the connection serves
// its next request, and its client leaving later (or the server stopping) is no
// business of the first handler.
TEST(HttpServer, AWatchedReplyStopsWatchingWhenItAnswers) {
  TestServer s;
  {
    Raw c(s.port);
    ASSERT_TRUE(c.send("GET /watched HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_NE(c.read_until("}", 1).find("\"watched\":true"), std::string::npos);
    ASSERT_TRUE(c.send("GET /watched HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_NE(c.read_until("}", 1).find("\"watched\":true"), std::string::npos);
    ASSERT_TRUE(c.send("GET /items/3 HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_NE(c.read_until("}", 1).find("\"id\":\"3\""), std::string::npos);
  }
  s.server->stop();  // Joins the I/O threads: any handler still registered has run.
  EXPECT_EQ(s.gone_calls.load(), 0);
}

TEST(HttpServer, BlockingHandlersRunOffTheIoThreads) {
  TestServer s;
  Raw c(s.port);
  ASSERT_TRUE(c.send("POST /blocking HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
  EXPECT_NE(c.read_all(10s).find("200 OK"), std::string::npos);
}

TEST(HttpServer, StopsWithConnectionsOpen) {
  TestServer s;
  Raw a(s.port), b(s.port);
  ASSERT_TRUE(a.send("GET /items/1 HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(a.read_until("}", 1).find("200 OK"), std::string::npos);
  ASSERT_TRUE(b.send("GET /ite"));
  s.server->stop();
  bool closed = false;
  a.read_all(10s, &closed);
  EXPECT_TRUE(closed);
}

// A fallback takes every request no route matches, instead of a 404 or 405 (a
// follower scheduler redirects them all); matching routes still win.
TEST(Router, FallbackTakesWhatNoRouteMatches) {
  Router r;
  r.add("GET", "/items/{id}", [](Request&, const Reply&) {});
  const Router::Route* route = nullptr;
  std::vector<std::string> caps;
  EXPECT_EQ(r.match("GET", "/nothing", &route, caps), Router::Match::no_path);
  EXPECT_EQ(r.match("POST", "/items/1", &route, caps), Router::Match::no_method);
  r.set_fallback([](Request&, const Reply&) {});
  ASSERT_EQ(r.match("GET", "/items/7", &route, caps), Router::Match::found);
  EXPECT_EQ(route->method, "GET");
  EXPECT_EQ(caps, std::vector<std::string>{"7"});
  ASSERT_EQ(r.match("POST", "/items/1", &route, caps), Router::Match::found);
  EXPECT_EQ(route->method, "");  // The fallback.
  EXPECT_TRUE(caps.empty());
  ASSERT_EQ(r.match("DELETE", "/a/b/c", &route, caps), Router::Match::found);
  EXPECT_EQ(route->method, "");
}

}  // namespace
}  // namespace tessel::http
