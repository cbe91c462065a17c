#pragma once
// Listening-socket options for cpp-httplib servers. Debian's compiled cpp-httplib
// 0.11 listens with a backlog of 5 (1,000 agents reconnecting at once overflow it
// and wait for SYN retries, 1 s and more) and sets SO_REUSEPORT by default, which
// lets a second server bind the same port and silently take part of its
// connections. ListenerOptions sets SO_REUSEADDR only and, once bound, widens the
// backlog to SOMAXCONN. Header-only: include it where httplib is linked.

#include <sys/socket.h>

#include <memory>

#include <httplib.h>

namespace tessel::api {

class ListenerOptions {
 public:
  // Installs the socket options on `server`; call before binding.
  explicit ListenerOptions(httplib::Server& server) : fd_(std::make_shared<int>(-1)) {
    server.set_socket_options([fd = fd_](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      *fd = sock;  // The last socket tried is the one that bound.
    });
  }
  // Call after a successful bind_to_port / bind_to_any_port.
  bool widen_backlog() const { return *fd_ >= 0 && ::listen(*fd_, SOMAXCONN) == 0; }

 private:
  std::shared_ptr<int> fd_;
};

}  // namespace tessel::api
