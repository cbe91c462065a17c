#include "notify_socket.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "eventually.hpp"

namespace tessel::testkit {

NotifySocket::NotifySocket(std::string path) : path_(std::move(path)) {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("notify socket: socket failed");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    throw std::runtime_error("notify socket: cannot bind " + path_);
  }
  timeval tv{0, 100'000};  // recv() waits at most 100 ms, so a wait can end on time.
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool NotifySocket::wait_for_all(const std::vector<std::string>& wanted, std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) received_ += std::string(buf, static_cast<size_t>(n)) + "\n";
        return std::all_of(wanted.begin(), wanted.end(),
                           [&](const std::string& w) { return received_.find(w) != std::string::npos; });
      },
      timeout);
}

}  // namespace tessel::testkit
