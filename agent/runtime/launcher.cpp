#include "tessel/agent/launcher.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessel/agent/proc_info.hpp"

namespace tessel::agent {

Result<int> DetachedLauncher::launch(const std::string& task_dir) {
  const std::string log = task_dir + "/supervisor.log";
  std::string a0 = supervisor_, a1 = "--task-dir", a2 = task_dir;
  char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return Error{"open " + log + ": " + std::strerror(errno)};
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pfd[2];
  if (::pipe2(pfd, O_CLOEXEC) != 0) {
    ::close(log_fd);
    ::close(null_fd);
    return Error{std::string("pipe: ") + std::strerror(errno)};
  }
  pid_t mid = ::fork();
  if (mid == 0) {
    // Middle process: async-signal-safe calls only (the agent is multi-threaded).
    ::setsid();
    pid_t sup = ::fork();
    if (sup == 0) {
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(null_fd, 0);
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
      ::close_range(3, ~0U, 0);
      ::execv(argv[0], argv);
      ::_exit(127);
    }
    int32_t v = static_cast<int32_t>(sup);
    (void)!::write(pfd[1], &v, sizeof v);
    ::_exit(sup > 0 ? 0 : 1);
  }
  ::close(pfd[1]);
  ::close(log_fd);
  ::close(null_fd);
  if (mid < 0) {
    ::close(pfd[0]);
    return Error{std::string("fork: ") + std::strerror(errno)};
  }
  int32_t pid = -1;
  ssize_t n;
  do n = ::read(pfd[0], &pid, sizeof pid);
  while (n < 0 && errno == EINTR);
  ::close(pfd[0]);
  int status = 0;
  while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != sizeof pid || pid <= 0) return Error{"fork of the supervisor failed"};
  return static_cast<int>(pid);
}

Status DetachedLauncher::stop(const SupervisorRecord& sup) {
  if (!is_same_process_alive(sup.pid, sup.start_time)) return ok_status();
  if (::kill(sup.pid, SIGTERM) != 0 && errno != ESRCH)
    return Error{"kill " + std::to_string(sup.pid) + ": " + std::strerror(errno)};
  return ok_status();
}

Status DetachedLauncher::signal(const SupervisorRecord& sup, int signo) {
  if (!is_same_process_alive(sup.pid, sup.start_time)) return ok_status();
  union sigval value {};
  value.sival_int = signo;
  if (::sigqueue(sup.pid, SIGRTMIN, value) != 0 && errno != ESRCH)
    return Error{"sigqueue " + std::to_string(sup.pid) + ": " + std::strerror(errno)};
  return ok_status();
}

Result<int> reserve_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{std::string("socket: ") + std::strerror(errno)};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Error e{std::string("bind port 0: ") + std::strerror(errno)};
    ::close(fd);
    return e;
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace tessel::agent
