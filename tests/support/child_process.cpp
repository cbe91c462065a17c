// testkit child processes: fork/exec with files or pipes for output, waits that
// poll with deadlines.
#include "child_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "eventually.hpp"
#include "files.hpp"

extern char** environ;

namespace tessel::testkit {

namespace {

using Clock = std::chrono::steady_clock;

// "NAME=VALUE" strings: the inherited environment (unless not wanted) with o.env over it.
std::vector<std::string> environment_of(const ChildOptions& o) {
  std::vector<std::string> envs;
  for (const auto& [k, v] : o.env) envs.push_back(k + "=" + v);
  if (o.inherit_env) {
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      if (!o.env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
    }
  }
  return envs;
}

// Forks; the child gets stdin /dev/null, `out` and `err` (-1: inherited) as stdout
// and stderr, its own process group, no blocked signals and o's limits, then execs.
pid_t fork_exec(const ChildOptions& o, int out, int err) {
  std::vector<std::string> args = o.argv, envs = environment_of(o);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (args.empty()) throw std::runtime_error("testkit: a child needs an argv");
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const int in = ::open("/dev/null", O_RDONLY);
  if (in < 0) ::_exit(126);
  ::dup2(in, 0);
  if (out >= 0) ::dup2(out, 1);
  if (err >= 0) ::dup2(err, 2);
  ::setpgid(0, 0);  // Its own group: the test's terminal signals don't reach it.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (o.rlimit_fsize_bytes) {
    ::signal(SIGXFSZ, SIG_IGN);  // Writes past the limit fail with EFBIG instead of killing.
    rlimit rl{static_cast<rlim_t>(*o.rlimit_fsize_bytes), static_cast<rlim_t>(RLIM_INFINITY)};
    ::setrlimit(RLIMIT_FSIZE, &rl);
  }
  rlimit lim{};
  if (o.nofile_soft > 0 && ::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    if (o.nofile_hard > 0) lim.rlim_max = std::min(o.nofile_hard, lim.rlim_max);
    lim.rlim_cur = std::min(o.nofile_soft, lim.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ::execve(argv[0], argv.data(), envp.data());
  ::_exit(127);
}

int open_output(const std::string& path) {
  if (path.empty()) return -1;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("testkit: open " + path + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

Child::Child(ChildOptions o) : o_(std::move(o)) {
  const int out = open_output(o_.stdout_path);
  const int err = o_.stderr_path == o_.stdout_path ? out : open_output(o_.stderr_path);
  pid_ = fork_exec(o_, out, err);
  if (out >= 0) ::close(out);
  if (err >= 0 && err != out) ::close(err);
}

Child::~Child() { kill9(); }

Child::Child(Child&& o) noexcept : pid_(o.pid_), status_(o.status_), o_(std::move(o.o_)), read_offset_(o.read_offset_) {
  o.pid_ = -1;
}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    kill9();
    pid_ = o.pid_;
    status_ = o.status_;
    o_ = std::move(o.o_);
    read_offset_ = o.read_offset_;
    o.pid_ = -1;
  }
  return *this;
}

bool Child::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return true;
}

void Child::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

int Child::wait() {
  if (pid_ > 0) {
    int st = 0;
    if (::waitpid(pid_, &st, 0) == pid_) status_ = st;
    pid_ = -1;
  }
  return status_.value_or(-1);
}

void Child::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);  // A stopped child dies all the same; let it run to.
  ::kill(pid_, SIGKILL);
  wait();
}

int Child::stop(int sig, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return status_.value_or(-1);
  ::kill(pid_, sig);
  if (eventually([&] { return !running(); }, timeout)) return status_.value_or(-1);
  kill9();
  return -1;
}

int Child::terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  if (!eventually([&] { return !running(); }, std::chrono::seconds(20))) kill9();
  return status_.value_or(-1);
}

std::string Child::stdout_text() const { return read_file(o_.stdout_path); }

std::string Child::stderr_text() const {
  std::string s = read_file(o_.stderr_path);
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

std::optional<std::string> Child::wait_line_with(const std::string& needle, std::chrono::milliseconds timeout) {
  std::optional<std::string> found;
  eventually(
      [&] {
        std::istringstream in(stdout_text());
        std::string line;
        while (std::getline(in, line))
          if (line.find(needle) != std::string::npos) found = line;
        return found.has_value();
      },
      timeout);
  return found;
}

int Child::wait_listening(std::chrono::milliseconds timeout) {
  int port = 0;
  eventually(
      [&] {
        std::istringstream in(stdout_text());
        std::string line;
        while (std::getline(in, line)) {
          if (line.rfind("listening on ", 0) != 0) continue;
          auto colon = line.rfind(':');
          if (colon == std::string::npos) continue;
          port = std::atoi(line.c_str() + colon + 1);
        }
        return port > 0 || !running();
      },
      timeout);
  return port;
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds timeout) {
  std::optional<std::string> line;
  eventually(
      [&] {
        const bool exited = !running();  // Checked first: what it wrote before exiting is in the file.
        const std::string text = stdout_text();
        if (read_offset_ < text.size()) {
          const auto nl = text.find('\n', read_offset_);
          if (nl != std::string::npos) {
            line = text.substr(read_offset_, nl - read_offset_);
            read_offset_ = nl + 1;
          }
        }
        return line.has_value() || exited;
      },
      timeout);
  return line;
}

RunResult run_process(const ChildOptions& o, std::optional<std::chrono::milliseconds> timeout) {
  RunResult result;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("testkit: pipe failed");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error("testkit: pipe failed");
  }
  const pid_t pid = fork_exec(o, out[1], err[1]);
  ::close(out[1]);
  ::close(err[1]);
  const auto deadline = timeout ? Clock::now() + *timeout : Clock::time_point::max();
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) break;
      wait_ms = static_cast<int>(left);
    }
    if (::poll(fds, 2, wait_ms) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  if (!timeout) {
    ::waitpid(pid, &status, 0);  // The program bounds itself; ctest's TIMEOUT bounds a hang.
  } else {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; },
                    std::max(left, std::chrono::milliseconds::zero()))) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return result;
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::map<std::string, std::string> environment_without(const std::string& prefix) {
  std::map<std::string, std::string> vars;
  for (char** p = environ; *p != nullptr; ++p) {
    std::string entry(*p);
    auto eq = entry.find('=');
    if (eq == std::string::npos || entry.rfind(prefix, 0) == 0) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return vars;
}

int kill_processes_mentioning(const std::string& needle) {
  int killed = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == ::getpid()) continue;
    const std::string cmd = read_file("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmd.find(needle) != std::string::npos && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
  }
  ::closedir(d);
  return killed;
}

bool pid_alive(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char st = stat[close + 2];
  return st != 'Z' && st != 'X';
}

}  // namespace tessel::testkit
