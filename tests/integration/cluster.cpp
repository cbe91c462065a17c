#include "cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sstream>
#include <thread>

namespace tessel::itest {

using nlohmann::json;
using namespace std::chrono_literals;

bool poll_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return cond();
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool pid_alive(pid_t pid) {
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char st = stat[close + 2];
  return st != 'Z' && st != 'X';
}

std::map<std::string, std::string> parse_env_dump(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos && eq > 0) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

Proc::Proc(std::vector<std::string> argv, std::map<std::string, std::string> extra_env, const std::string& prefix)
    : out_(prefix + ".out"), err_(prefix + ".err") {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!extra_env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : extra_env) envs.push_back(k + "=" + v);
  std::vector<char*> av, ev;
  for (auto& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  for (auto& e : envs) ev.push_back(e.data());
  ev.push_back(nullptr);
  int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execve(av[0], av.data(), ev.data());
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
}

Proc::~Proc() {
  if (!reaped_) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    wait();
  }
}

void Proc::signal(int sig) const { ::kill(pid_, sig); }

int Proc::wait() {
  int status = 0;
  if (!reaped_) ::waitpid(pid_, &status, 0);
  reaped_ = true;
  return status;
}

std::string Proc::out() const { return slurp(out_); }
std::string Proc::err() const { return slurp(err_); }

std::optional<std::string> Proc::wait_line_with(const std::string& needle, std::chrono::milliseconds t) const {
  std::optional<std::string> found;
  poll_until(
      [&] {
        std::istringstream in(out());
        std::string line;
        while (std::getline(in, line))
          if (line.find(needle) != std::string::npos) found = line;
        return found.has_value();
      },
      t);
  return found;
}

Cluster::Cluster() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tessel-it-XXXXXX").string();
  root_ = ::mkdtemp(tmpl.data());
}

Cluster::~Cluster() {
  // Agents first (tasks' supervisors are detached: stop them through their state).
  for (auto& [name, a] : agents_) a.reset();
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    if (e.path().filename().string().rfind("agent-", 0) != 0) continue;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(e.path() / "tasks", ec)) {
      auto j = json::parse(slurp((t.path() / "supervisor.json").string()), nullptr, false);
      if (j.is_object() && !std::filesystem::exists(t.path() / "result.json")) ::kill(j["pid"].get<int>(), SIGTERM);
    }
  }
  scheduler_.reset();
  if (!::getenv("TESSEL_KEEP_TEST_DIRS")) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
}

namespace {
// A port the kernel considers free right now. Each test cluster draws its
// MASTER_PORT range (that port and the 19 above it) from one, so clusters of tests running in parallel on this
// host (ctest -j) do not hand the same rendezvous port to two jobs.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}
}  // namespace

void Cluster::start_scheduler() {
  if (master_port_ == 0) master_port_ = free_port();
  std::string prefix = root_ + "/scheduler" + std::to_string(sched_starts_++);
  std::string listen = port_ ? "127.0.0.1:" + std::to_string(port_) : "127.0.0.1:0";
  std::vector<std::string> argv{
      TESSEL_SCHEDULER_BIN,
      "--listen",
      listen,
      "--db",
      root_ + "/sched.db",
      "--heartbeat-timeout",
      "2",
      "--master-port-range",
      std::to_string(master_port_) + "-" + std::to_string(std::min(master_port_ + 19, 65535))};
  argv.insert(argv.end(), scheduler_args.begin(), scheduler_args.end());
  scheduler_ = std::make_unique<Proc>(std::move(argv), std::map<std::string, std::string>{}, prefix);
  auto line = scheduler_->wait_line_with("listening on", 20s);
  ASSERT_TRUE(line) << scheduler_->err();
  port_ = std::stoi(line->substr(line->rfind(':') + 1));
}

void Cluster::stop_scheduler(int sig) {
  scheduler_->signal(sig);
  scheduler_->wait();
}

void Cluster::start_agent(const std::string& node, const std::string& fixture, std::map<std::string, std::string> env) {
  agents_.erase(node);
  env["FAKE_HL_SMI_FIXTURE"] = std::string(TESSEL_FIXTURES_DIR) + "/hl-smi/" + fixture;
  std::string prefix = root_ + "/agent-" + node + "-" + std::to_string(agent_starts_[node]++);
  auto p = std::make_unique<Proc>(
      std::vector<std::string>{TESSEL_AGENT_BIN, "--scheduler", "http://127.0.0.1:" + std::to_string(port_), "--node",
                               node, "--address", "127.0.0.1", "--listen", "127.0.0.1:0", "--state-dir",
                               state_dir(node), "--vendor", "habana", "--hl-smi", FAKE_HL_SMI_BIN,
                               "--heartbeat-interval", "0.3"},
      env, prefix);
  ASSERT_TRUE(p->wait_line_with("listening on", 20s)) << p->err();
  agents_[node] = std::move(p);
}

void Cluster::kill_agent(const std::string& node, int sig) {
  agents_.at(node)->signal(sig);
  if (sig == SIGKILL || sig == SIGTERM) agents_.at(node)->wait();
}

std::string Cluster::task_dir(const std::string& node, const std::string& job, int rank) const {
  return state_dir(node) + "/tasks/" + job + ".0." + std::to_string(rank);
}

std::string Cluster::log(const std::string& node, const std::string& job, int rank, int local) const {
  return slurp(task_dir(node, job, rank) + "/rank" + std::to_string(local) + ".log");
}

json Cluster::get(const std::string& path, int* status) {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path.c_str());
  if (status) *status = r ? r->status : 0;
  if (!r) return json();
  return json::parse(r->body, nullptr, false);
}

int Cluster::post(const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  return r ? r->status : 0;
}

json Cluster::submit(const json& spec) {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Post("/v1/jobs", spec.dump(), "application/json");
  EXPECT_TRUE(r && r->status / 100 == 2) << (r ? r->body : std::string("no answer"));
  return r ? json::parse(r->body, nullptr, false) : json();
}

std::optional<json> Cluster::wait_job(const std::string& id, const std::vector<std::string>& states,
                                      std::chrono::milliseconds t) {
  std::optional<json> job;
  json last;
  bool ok = poll_until(
      [&] {
        last = get("/v1/jobs/" + id);
        if (!last.is_object()) return false;
        for (const auto& s : states)
          if (last.value("state", "") == s) job = last;
        return job.has_value();
      },
      t);
  if (!ok) ADD_FAILURE() << "job " << id << " never reached the wanted state; last: " << last.dump();
  return job;
}

bool Cluster::wait_node_state(const std::string& node, const std::string& state, std::chrono::milliseconds t) {
  return poll_until(
      [&] {
        auto n = get("/v1/nodes/" + node);
        return n.is_object() && n.value("state", "") == state;
      },
      t);
}

}  // namespace tessel::itest
