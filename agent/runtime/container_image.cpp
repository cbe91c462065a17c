#include "tessel/agent/container_image.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

namespace tessel::agent {

namespace {

struct Ran {
  bool timed_out = false;
  int status = 0;  // waitpid's.
};

// Runs argv[0] (absolute) with `env`, stdin /dev/null, stdout and stderr appended to
// `log`, in a process group of its own that is killed at the deadline.
Result<Ran> run_logged(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                       const std::string& log, int64_t timeout_s) {
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return Error{"open " + log + ": " + std::strerror(errno)};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Made before the fork: the child only execs.
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(std::string(k).append("=").append(v));
  std::vector<char*> cenv;
  cenv.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    ::setpgid(0, 0);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  if (pid < 0) return Error{std::string("fork: ") + std::strerror(errno)};
  Ran ran;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const pid_t done = ::waitpid(pid, &ran.status, WNOHANG);
    if (done == pid) return ran;
    if (done < 0 && errno != EINTR) return Error{std::string("waitpid: ") + std::strerror(errno)};
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &ran.status, 0) < 0 && errno == EINTR) {
      }
      ran.timed_out = true;
      return ran;
    }
    timespec step{0, 20'000'000};  // Polled: SIGCHLD is blocked in the supervisor.
    ::nanosleep(&step, nullptr);
  }
}

bool succeeded(const Ran& r) { return !r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

// The last non-empty line of the log from `from` on (what podman said last).
std::string last_line(const std::string& log, std::streamoff from) {
  std::ifstream in(log);
  in.seekg(from);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  return last;
}

std::streamoff size_of(const std::string& path) {
  std::ifstream in(path, std::ios::ate);
  return in ? static_cast<std::streamoff>(in.tellg()) : 0;
}

std::vector<std::string> podman_cmd(const ContainerPlan& plan, std::initializer_list<std::string> tail) {
  std::vector<std::string> a = plan.podman;
  a.insert(a.end(), tail);
  return a;
}

}  // namespace

Status ensure_image(const ContainerPlan& plan, const std::map<std::string, std::string>& env, const std::string& log,
                    const std::function<void()>& on_pull) {
  const std::string what = "pulling image " + plan.image;
  if (!plan.pull_always) {
    auto exists = run_logged(podman_cmd(plan, {"image", "exists", plan.image}), env, log, plan.pull_timeout_s);
    if (!exists) return exists.error().wrap(what);
    if (succeeded(*exists)) return ok_status();
  }
  if (on_pull) on_pull();
  std::vector<std::string> pull = podman_cmd(plan, {"pull", "--quiet"});
  if (!plan.authfile.empty()) pull.insert(pull.end(), {"--authfile", plan.authfile});
  pull.push_back(plan.image);
  const std::streamoff from = size_of(log);
  auto ran = run_logged(pull, env, log, plan.pull_timeout_s);
  if (!ran) return ran.error().wrap(what);
  if (ran->timed_out) return Error{what + ": timed out after " + std::to_string(plan.pull_timeout_s) + " s"};
  if (succeeded(*ran)) return ok_status();
  std::string why = last_line(log, from);
  if (why.rfind("Error: ", 0) == 0) why = why.substr(7);
  return Error{what + ": " + (why.empty() ? "podman pull failed" : why)};
}

void remove_containers(const ContainerPlan& plan, const std::map<std::string, std::string>& env,
                       const std::string& log) {
  std::vector<std::string> rm = podman_cmd(plan, {"rm", "--force", "--ignore", "--time", "0"});
  rm.insert(rm.end(), plan.names.begin(), plan.names.end());
  (void)run_logged(rm, env, log, 60);
}

}  // namespace tessel::agent
