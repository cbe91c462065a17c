#pragma once
// A real cluster for chaos tests: tessel-scheduler and tessel-agent child
// processes on loopback (ports 0), each in a temp dir, plus a small REST client.
//
// Contracts:
// - Nothing here sleeps to wait for an outcome: `eventually` polls a predicate
//   until a deadline (with a short pause between polls so two shared cores are
//   not burnt).
// - Every process started through `Child` is SIGKILLed and reaped by its
//   destructor. Task supervisors and tasks outlive agents on purpose, so
//   `TempDir`'s destructor SIGKILLs every process whose command line names the
//   temp dir (found by scanning /proc, by pid), then removes the dir.
// - Single-threaded use per object, except `Api`, which opens one connection
//   per call and may be shared by threads.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessel::chaos {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Polls `pred` until it holds or `timeout` passes; returns the last result.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 20s);

// A unique directory under the system temp dir, removed (with the processes
// that name it) on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str(const std::string& child = "") const {
    return child.empty() ? path_.string() : (path_ / child).string();
  }

 private:
  fs::path path_;
};

// SIGKILLs every process (other than this one) whose /proc/<pid>/cmdline contains `needle`.
int kill_processes_mentioning(const std::string& needle);

struct ChildOptions {
  std::vector<std::string> argv;           // argv[0] is the executable path.
  std::map<std::string, std::string> env;  // Added to (or replacing in) this process's env.
  std::string stdout_path, stderr_path;    // Files the child writes to.
  std::optional<long> rlimit_fsize_bytes;  // RLIMIT_FSIZE in the child (SIGXFSZ ignored).
};

// One child process; SIGKILLed and reaped on destruction.
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
  bool running();   // Not yet exited (reaps it if it has).
  void kill9();     // SIGKILL and reap.
  int terminate();  // SIGTERM, wait (up to 20 s, then SIGKILL); returns the wait status.
  // Polls the stdout file for "listening on HOST:PORT"; returns PORT or 0.
  int wait_listening(std::chrono::milliseconds timeout = 20s);
  std::string stderr_text() const;
  void forget() { pid_ = -1; }  // Already reaped elsewhere.

 private:
  pid_t pid_ = -1;
  ChildOptions o_;
};

// Minimal REST client for the scheduler (a fresh connection per call).
class Api {
 public:
  Api(std::string host, int port) : host_(std::move(host)), port_(port) {}
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }

  struct Reply {
    int status = 0;  // 0: no HTTP answer (connection failed).
    json body;
  };
  Reply post(const std::string& path, const json& body) const;
  Reply get(const std::string& path) const;

  // GET /v1/jobs (every page).
  std::vector<json> all_jobs() const;
  std::optional<json> job(const std::string& id) const;
  std::string job_state(const std::string& id) const;
  std::optional<json> node(const std::string& name) const;
  std::vector<json> nodes() const;

 private:
  std::string host_;
  int port_;
};

// Paths of the binaries under test and fixtures.
std::string scheduler_bin();
std::string agent_bin();
std::string fake_hl_smi_bin();
std::string gaudi2_fixture();

// A tessel-scheduler on HOST:PORT (PORT 0: any) with its DB at `db`.
Child start_scheduler(const TempDir& dir, const std::string& tag, const std::string& db, const std::string& listen,
                      std::vector<std::string> extra = {}, std::optional<long> rlimit_fsize = std::nullopt);

struct AgentSpec {
  std::string node;
  std::string scheduler_url;
  std::string mode_file;  // FAKE_HL_SMI_MODE_FILE.
  std::string listen = "127.0.0.1:0";
  std::string address = "127.0.0.1";
  double heartbeat_interval_s = 0.5;
  std::vector<std::string> prefix;  // e.g. {"ip","netns","exec",NS}.
};
// An AgentSpec with the defaults above.
inline AgentSpec agent_spec(std::string node, std::string scheduler_url) {
  AgentSpec s;
  s.node = std::move(node);
  s.scheduler_url = std::move(scheduler_url);
  return s;
}
// A tessel-agent with a fake hl-smi (Gaudi 2, 8 cards), state in dir/<node>.
Child start_agent(const TempDir& dir, const AgentSpec& spec);

// Waits until every named node is in `state` (GET /v1/nodes).
bool wait_nodes(const Api& api, const std::vector<std::string>& names, const std::string& state,
                std::chrono::milliseconds timeout = 20s);

// Cards (node, module_id) held by assigned/running jobs: returns a description of
// the first card held by two jobs, or "" when none is.
std::string find_double_booking(const std::vector<json>& jobs);

// A job spec: `sh -c SCRIPT` (the job's own choice of shell), `devices` cards.
json shell_job(const std::string& script, int devices, int max_retries = 0);

// Runs argv[0] (a path, or a name looked up in /usr/sbin:/usr/bin:/sbin:/bin)
// with output appended to `log`; returns its exit code (-1 when it did not exit
// within 20 s or was killed).
int run_and_wait(std::vector<std::string> argv, const std::string& log);

// Lines of a text file ("" when missing).
std::vector<std::string> read_lines(const std::string& path);

}  // namespace tessel::chaos
