#include "http_call.hpp"

#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace tessel::bench_load {

// Opens fd for `c` (closed) and starts connecting. Returns an errno-ish message on failure.
std::string open_call(Call& c, int ep, uint64_t tag, uint32_t src, int port, bool nodelay) {
  c.tag = tag;
  c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) return std::string("socket: ") + std::strerror(errno);
  if (nodelay) {
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (src != htonl(INADDR_ANY)) {
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in b{};
    b.sin_family = AF_INET;
    b.sin_addr.s_addr = src;
    if (::bind(c.fd, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0) {
      std::string e = std::string("bind: ") + std::strerror(errno);
      ::close(c.fd);
      c.fd = -1;
      return e;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    std::string e = std::string("connect: ") + std::strerror(errno);
    ::close(c.fd);
    c.fd = -1;
    return e;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = tag;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  c.state = Call::connecting;
  return "";
}

void close_call(Call& c) {
  if (c.fd >= 0) ::close(c.fd);  // Closing removes it from the epoll set.
  c.fd = -1;
  c.state = Call::closed;
  c.in.clear();
}

// 1: a whole response in c.in (taken out), 0: need more, -1: malformed.
int take_response(Call& c, Response& r) {
  auto head_end = c.in.find("\r\n\r\n");
  if (head_end == std::string::npos) return c.in.size() > 65536 ? -1 : 0;
  std::string head = c.in.substr(0, head_end);
  for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto cl = head.find("content-length:");
  if (cl == std::string::npos || head.rfind("http/1.", 0) != 0) return -1;
  size_t len = std::strtoul(head.c_str() + cl + 15, nullptr, 10);
  if (c.in.size() < head_end + 4 + len) return 0;
  r.status = std::atoi(head.c_str() + 9);
  r.server_closes = head.find("connection: close") != std::string::npos;
  r.body = c.in.substr(head_end + 4, len);
  c.in.erase(0, head_end + 4 + len);
  return 1;
}

// Drives `c` after an event (or right after open/new request). Returns:
//   0 still going, 1 response complete (in r), -1 failed (err says why; fd closed).
int drive(Call& c, Response& r, std::string& err) {
  if (c.state == Call::connecting) {
    int so = 0;
    socklen_t len = sizeof so;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &so, &len);
    if (so != 0) {
      err = std::string("connect: ") + std::strerror(so);
      close_call(c);
      return -1;
    }
    // Still connecting: no error yet and not writable. send() below answers EAGAIN then.
    c.state = Call::writing;
  }
  if (c.state == Call::writing) {
    while (c.off < c.out.size()) {
      size_t end = (c.split > 0 && c.off < c.split) ? c.split : c.out.size();
      ssize_t w = ::send(c.fd, c.out.data() + c.off, end - c.off, MSG_NOSIGNAL);
      if (w > 0) {
        c.off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)) return 0;
      err = std::string("send: ") + std::strerror(errno);
      close_call(c);
      return -1;
    }
    c.state = Call::reading;
  }
  if (c.state == Call::reading || c.state == Call::idle || c.state == Call::draining) {
    const bool waiting = c.state != Call::reading;
    char buf[16384];
    bool eof = false;
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && waiting) {
        close_call(c);
        return 0;
      }
      if (n < 0) {
        err = std::string("recv: ") + std::strerror(errno);
        close_call(c);
        return -1;
      }
      eof = true;
      break;
    }
    if (c.state == Call::idle) {
      // Between requests: the server closed the idle connection (or sent junk).
      if (eof || !c.in.empty()) close_call(c);
      return 0;
    }
    if (c.state == Call::draining) {
      if (eof) close_call(c);
      return 0;
    }
    int got = take_response(c, r);
    if (got == 1) {
      r.eof = eof && c.in.empty();
      if (eof) r.server_closes = true;
      return 1;
    }
    if (got < 0 || eof) {
      err = got < 0 ? "malformed response" : (c.in.empty() ? "closed before answering" : "closed mid-answer");
      close_call(c);
      return -1;
    }
  }
  return 0;
}

std::string post_request(const std::string& path, int port, const std::string& body, bool keep_alive, size_t* split) {
  std::string head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     (keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  if (split) *split = head.size();
  return head + body;
}

}  // namespace tessel::bench_load
