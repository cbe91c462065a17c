#pragma once
// Child processes for tests: start a program with its output in files, wait for
// what it prints, stop it; run one to completion capturing its output; find and
// kill processes by their command line.

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessel::testkit {

struct ChildOptions {
  std::vector<std::string> argv;           // argv[0] is the executable's path (no PATH lookup).
  std::map<std::string, std::string> env;  // Added to (or replacing in) the inherited environment.
  bool inherit_env = true;                 // false: `env` is the whole environment.
  std::string stdout_path, stderr_path;    // Files the child appends to; empty: the test's own.
  std::optional<long> rlimit_fsize_bytes;  // RLIMIT_FSIZE in the child (SIGXFSZ ignored).
  rlim_t nofile_soft = 0;                  // > 0: the child's soft RLIMIT_NOFILE (within the hard one).
  rlim_t nofile_hard = 0;                  // > 0: and its hard RLIMIT_NOFILE (lowered only).
};

// ChildOptions that run `argv` with this process's environment, output and limits.
inline ChildOptions command(std::vector<std::string> argv) {
  ChildOptions o;
  o.argv = std::move(argv);
  return o;
}

// One child process (stdin /dev/null, a process group of its own, no signals
// blocked); SIGKILLed and reaped on destruction.
class Child {
 public:
  Child() = default;
  explicit Child(ChildOptions o);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& o) noexcept;
  Child& operator=(Child&& o) noexcept;

  pid_t pid() const { return pid_; }
  bool running();              // Not yet exited (reaps it if it has).
  void signal(int sig) const;  // Sends `sig` (nothing once reaped).
  int wait();                  // Blocks until it exits; its wait status (-1 when never started).
  void kill9();                // SIGKILL and reap.
  // Sends `sig` and waits up to `timeout` for it to exit; returns the wait status,
  // or -1 when it had to be SIGKILLed.
  int stop(int sig, std::chrono::milliseconds timeout);
  // SIGTERM, then up to 20 s, then SIGKILL; returns the last wait status.
  int terminate();

  std::string stdout_text() const;
  std::string stderr_text() const;  // The last 4,000 bytes of stderr.
  // The last stdout line containing `needle`, polled for up to `timeout`.
  std::optional<std::string> wait_line_with(const std::string& needle, std::chrono::milliseconds timeout);
  // Polls stdout for "listening on HOST:PORT"; returns PORT, or 0 when the child
  // exited or `timeout` passed first.
  int wait_listening(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The next stdout line not yet returned; nullopt when the child exited with no
  // further line or `timeout` passed.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;  // Set once reaped.
  ChildOptions o_;
  size_t read_offset_ = 0;  // Of read_line() in the stdout file.
};

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal, timed out, or did not start.
  std::string out;
  std::string err;
};

// Runs o.argv to completion (SIGKILLed after `timeout`, when given), capturing its
// stdout and stderr (o.stdout_path and o.stderr_path are ignored).
RunResult run_process(const ChildOptions& o, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// This process's environment without the variables whose names start with `prefix`.
std::map<std::string, std::string> environment_without(const std::string& prefix);

// SIGKILLs every process (other than this one) whose /proc/<pid>/cmdline contains
// `needle`; returns how many.
int kill_processes_mentioning(const std::string& needle);

// Whether `pid` exists and is not a zombie (from /proc/<pid>/stat).
bool pid_alive(pid_t pid);

}  // namespace tessel::testkit
