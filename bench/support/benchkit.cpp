// tessel_benchkit: process start, /proc sampling, percentiles, RLIMIT_NOFILE, files.
#include "benchkit.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tessel::benchkit {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

double process_cpu_ms() { return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return utime + stime;
}

double status_field(pid_t pid, const std::string& key, bool kib) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) / (kib ? 1024.0 : 1.0);
  return 0;
}

rlim_t raise_nofile() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  rlim_t nr_open = 1 << 20;
  if (std::ifstream f("/proc/sys/fs/nr_open"); f) f >> nr_open;
  if (lim.rlim_max < nr_open) {
    rlimit want{nr_open, nr_open};
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) return nr_open;
  }
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  getrlimit(RLIMIT_NOFILE, &lim);
  return lim.rlim_cur;
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> scheduler_argv(const std::string& bin, const std::string& db, std::vector<std::string> flags) {
  std::vector<std::string> argv = {bin, "--listen", "127.0.0.1:0", "--db", db};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

ServerProcess::ServerProcess(std::vector<std::string> argv, const std::string& out_path, const std::string& err_path,
                             const std::map<std::string, std::string>& env) {
  std::vector<char*> av;
  for (auto& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = err_path.empty() ? -1 : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw std::runtime_error("open " + out_path + " failed");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // Dies with the benchmark.
    ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execv(av[0], av.data());
    ::_exit(127);
  }
  ::close(out);
  if (err >= 0) ::close(err);
  // Polls the output for the line, with a deadline (the child may also exit first).
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    std::ifstream in(out_path);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("listening on ", 0) == 0 && in.good()) port_ = std::atoi(line.c_str() + line.rfind(':') + 1);
    if (port_ > 0) break;
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;  // Exited: nothing to stop.
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 1000; ++i) {  // 10 s at most, then SIGKILL.
    if (::waitpid(pid_, nullptr, WNOHANG) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "benchkit: %d did not stop in 10 s: SIGKILL\n", pid_);
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

}  // namespace tessel::benchkit
