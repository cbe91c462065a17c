// libFuzzer: raw bytes sent to the real scheduler Service over loopback (in-memory
// store, fake clock): the HTTP/1.1 request parser and framing (tessel::http on
// Beast), routing, query and body parsing, and every route behind them. Each input
// is one connection: the bytes are sent, the write side is closed, and everything
// the server answers is read until it closes. The server must neither crash, nor
// answer anything that is not an HTTP response. Inputs that reach the agents' long
// poll are skipped (that route is meant to hold its answer, 30 s), and so are log
// reads: they are forwarded to a node's address, which an input could point outside
// this machine.
//
// The harness waits up to 10 s for each answer (the server's head and body timeouts
// are 2 s here), retrying a poll() that libFuzzer's own timer signal interrupted
// (EINTR): an earlier version took those interruptions for stalls of the server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/store.hpp"

namespace {

using namespace tessel::scheduler;

struct Target {
  Target() {
    std::signal(SIGPIPE, SIG_IGN);
    auto opened = open_sqlite_store(":memory:", SyncMode::normal);
    if (!opened) __builtin_trap();
    store = std::move(*opened);
    ServiceOptions o;
    o.port = 0;
    o.liveness_tick_ms = 0;
    o.io_threads = 1;
    o.limits.head_timeout = std::chrono::seconds(2);
    o.limits.body_timeout = std::chrono::seconds(2);
    service = std::make_unique<Service>(*store, clock, std::nullopt, o);
    if (!service->start().ok()) __builtin_trap();
  }
  tessel::FakeClock clock;
  std::unique_ptr<Store> store;
  std::unique_ptr<Service> service;
};

// The harness's own sockets close with a reset (SO_LINGER 0) so that tens of
// thousands of inputs leave no TIME_WAIT behind: a machine that ran the other test
// suites just before can otherwise run out of loopback ports (connect() fails with
// EADDRNOTAVAIL, which is the harness's problem, not the server's). Anything else
// that stops a connect, ECONNREFUSED above all, means the server stopped listening.
int connect_to(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0;; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      std::fprintf(stderr, "fuzz_http_server: socket: %s\n", std::strerror(errno));
      __builtin_trap();
    }
    const linger reset{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    const int err = errno;
    ::close(fd);
    if ((err == EADDRNOTAVAIL || err == EAGAIN || err == EINTR) && attempt < 100) {
      ::poll(nullptr, 0, 50);  // Ports come back as old ones leave TIME_WAIT.
      continue;
    }
    std::fprintf(stderr, "fuzz_http_server: connect to port %d: %s\n", port, std::strerror(err));
    __builtin_trap();
  }
}

// Waits until `fd` is readable (or closed); false after `limit` without.
bool readable_within(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target t;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Literal path segments are matched undecoded, so these spellings are the only ones
  // that reach the long poll and the log forwarder.
  if (input.find("ssignments") != std::string_view::npos || input.find("logs") != std::string_view::npos) return 0;
  const int fd = connect_to(t.service->port());
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // The server may close early (a 4xx); that is fine.
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  for (;;) {
    // Everything sent is complete, so the server must finish within its timeouts.
    if (!readable_within(fd, std::chrono::seconds(10))) {
      std::fprintf(stderr, "fuzz_http_server: no answer within 10 s\n");
      __builtin_trap();
    }
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!answer.empty() && answer.rfind("HTTP/1.", 0) != 0) __builtin_trap();
  return 0;
}
