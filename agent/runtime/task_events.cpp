#include "tessel/agent/task_events.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tessel::agent {

namespace {

// The longest assignment id is 200 bytes (is_safe_task_id); a note fills the rest.
constexpr size_t kMaxDatagram = 1024;

std::string errno_text() { return std::strerror(errno); }

std::string without_trailing_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string parent_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::optional<ino_t> inode_of(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}

}  // namespace

std::string events_socket_path(const std::string& state_root) {
  return without_trailing_slashes(state_root) + "/" + kEventsSocketName;
}

std::string events_socket_path_for_task(const std::string& task_dir) {
  // <state_root>/tasks/<id>: two levels up.
  return events_socket_path(parent_of(parent_of(without_trailing_slashes(task_dir))));
}

Result<sockaddr_un> unix_socket_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error{"socket path " + path + " is " + std::to_string(path.size()) + " bytes, a unix socket allows " +
                 std::to_string(sizeof addr.sun_path - 1)};
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

TaskEventSender::TaskEventSender(const std::string& socket_path) {
  auto addr = unix_socket_address(socket_path);
  if (!addr) {
    spdlog::warn("supervisor: not telling the agent about task changes ({}); it finds them within a heartbeat interval",
                 addr.error().message);
    return;
  }
  addr_ = *addr;
}

static TaskEvent parse_task_event(const std::string& datagram) {
  const auto nl = datagram.find('\n');
  if (nl == std::string::npos) return TaskEvent{datagram, ""};
  return TaskEvent{datagram.substr(0, nl), datagram.substr(nl + 1)};
}

void TaskEventSender::send(const std::string& assignment_id, const std::string& note) const {
  if (!addr_) return;
  std::string datagram = assignment_id;
  if (!note.empty()) datagram = (datagram + "\n" + note).substr(0, kMaxDatagram);
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    spdlog::warn("supervisor: telling the agent: socket: {}", errno_text());
    return;
  }
  const ssize_t n = ::sendto(fd, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&*addr_), sizeof *addr_);
  // No agent (ENOENT: never bound; ECONNREFUSED: a stale socket file) or a full queue
  // (EAGAIN): see task_events.hpp for why the agent learns of the change anyway.
  if (n < 0 && errno != ENOENT && errno != ECONNREFUSED && errno != EAGAIN && errno != EWOULDBLOCK)
    spdlog::warn("supervisor: telling the agent at {}: {}", addr_->sun_path, errno_text());
  ::close(fd);
}

Result<std::unique_ptr<TaskEventSocket>> TaskEventSocket::bind(const std::string& path) {
  auto addr = unix_socket_address(path);
  if (!addr) return addr.error();
  const int sock = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (sock < 0) return Error{"socket: " + errno_text()};
  // A previous agent's socket file (it was killed, or did not clean up) blocks bind().
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    Error e{"removing stale " + path + ": " + errno_text()};
    ::close(sock);
    return e;
  }
  if (::bind(sock, reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    Error e{"bind " + path + ": " + errno_text()};
    ::close(sock);
    return e;
  }
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    Error e{"eventfd: " + errno_text()};
    ::close(sock);
    ::unlink(path.c_str());
    return e;
  }
  return std::unique_ptr<TaskEventSocket>(new TaskEventSocket(sock, wake, path, inode_of(path).value_or(0)));
}

TaskEventSocket::TaskEventSocket(int sock, int wake, std::string path, ino_t inode)
    : sock_(sock), wake_(wake), path_(std::move(path)), inode_(inode) {}

TaskEventSocket::~TaskEventSocket() {
  ::close(sock_);
  ::close(wake_);
  // Another agent may have replaced the file with its own socket: leave that one alone.
  if (inode_ != 0 && inode_of(path_) == inode_) ::unlink(path_.c_str());
}

void TaskEventSocket::interrupt() {
  const uint64_t one = 1;
  (void)!::write(wake_, &one, sizeof one);
}

std::vector<TaskEvent> TaskEventSocket::drain() {
  std::vector<TaskEvent> events;
  char buf[kMaxDatagram];
  for (;;) {
    const ssize_t n = ::recv(sock_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN: drained.
    events.push_back(parse_task_event(std::string(buf, static_cast<size_t>(n))));
  }
  return events;
}

std::optional<std::vector<TaskEvent>> TaskEventSocket::wait(std::optional<std::chrono::milliseconds> timeout) {
  pollfd fds[2] = {{wake_, POLLIN, 0}, {sock_, POLLIN, 0}};
  const int timeout_ms = timeout ? static_cast<int>(std::max<int64_t>(timeout->count(), 0)) : -1;
  int n;
  do n = ::poll(fds, 2, timeout_ms);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    spdlog::error("task events: poll: {}", errno_text());
    return std::nullopt;
  }
  if (fds[0].revents != 0) return std::nullopt;  // Interrupted (the eventfd is never read: it stays so).
  if (fds[1].revents & (POLLERR | POLLNVAL)) {
    spdlog::error("task events: socket {} failed", path_);
    return std::nullopt;
  }
  return drain();
}

}  // namespace tessel::agent
