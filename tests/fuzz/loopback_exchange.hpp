#pragma once
// For fuzz targets that drive a real HTTP server over loopback: one connection per
// input, the bytes sent, the write side closed, and everything answered read until
// the server closes. The harness traps (a finding) when the server stops listening
// or does not finish within 10 s: everything was sent, so its timeouts must end it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace tessel::fuzzing {

// The harness's own sockets close with a reset (SO_LINGER 0) so that tens of
// thousands of inputs leave no TIME_WAIT behind: a machine that ran the other test
// suites just before can otherwise run out of loopback ports (connect() fails with
// EADDRNOTAVAIL, which is the harness's problem, not the server's). Anything else
// that stops a connect, ECONNREFUSED above all, means the server stopped listening.
inline int connect_to(int port, const char* who) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0;; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      std::fprintf(stderr, "%s: socket: %s\n", who, std::strerror(errno));
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
    std::fprintf(stderr, "%s: connect to port %d: %s\n", who, port, std::strerror(err));
    __builtin_trap();
  }
}

// Waits until `fd` is readable (or closed); false after `limit` without. Retries a
// poll() that libFuzzer's own timer signal interrupted (EINTR): that is no stall.
inline bool readable_within(int fd, std::chrono::milliseconds limit) {
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

// Sends `request` on a new connection to 127.0.0.1:port, closes the write side and
// returns everything answered. Traps when the answer is not an HTTP response.
inline std::string exchange(int port, std::string_view request, const char* who) {
  const int fd = connect_to(port, who);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // The server may close early (a 4xx); that is fine.
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  for (;;) {
    if (!readable_within(fd, std::chrono::seconds(10))) {
      std::fprintf(stderr, "%s: no answer within 10 s\n", who);
      __builtin_trap();
    }
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!answer.empty() && answer.rfind("HTTP/1.", 0) != 0) __builtin_trap();
  return answer;
}

}  // namespace tessel::fuzzing
