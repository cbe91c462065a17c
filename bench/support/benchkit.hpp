#pragma once
// Shared by the benchmarks: a server child on port 0 (the scheduler, the agent),
// CPU and memory of a process from /proc, percentiles, the open-file limit, files.

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tessel::benchkit {

using Clock = std::chrono::steady_clock;

// Milliseconds from `a` to `b`.
double ms_between(Clock::time_point a, Clock::time_point b);

// The p-th percentile (0..100) of `v` (0 when empty).
double percentile(std::vector<double> v, double p);

// The whole file ("" when it cannot be read).
std::string read_file(const std::string& path);

// utime+stime in clock ticks, from /proc/<pid>/stat.
long cpu_ticks(pid_t pid);

// CPU time of this whole process (every thread) in ms, from std::clock().
double process_cpu_ms();

// A "KEY: VALUE" field of /proc/<pid>/status (VmRSS, VmHWM, Threads); kB fields in
// MiB when `kib`. 0 when missing.
double status_field(pid_t pid, const std::string& key, bool kib);

// Raises RLIMIT_NOFILE as far as allowed (the hard limit too when privileged, up
// to fs.nr_open); returns the soft limit now. Children inherit it.
rlim_t raise_nofile();

// A fresh directory "<prefix>-XXXXXX" under the system temp dir, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str(const std::string& child) const { return (path_ / child).string(); }

 private:
  std::filesystem::path path_;
};

// BIN --listen 127.0.0.1:0 --db DB FLAGS...: a tessel-scheduler for a ServerProcess.
std::vector<std::string> scheduler_argv(const std::string& bin, const std::string& db, std::vector<std::string> flags);

// A child that prints "listening on HOST:PORT" on stdout once it serves: its stdout
// goes to `out_path` (stderr stays the benchmark's unless `err_path` is given), it
// dies with the benchmark, and it gets SIGTERM (then, after 10 s, SIGKILL) on
// destruction. `port` is 0 when it exited or printed nothing within 30 s.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> argv, const std::string& out_path, const std::string& err_path = "",
                const std::map<std::string, std::string>& env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace tessel::benchkit
