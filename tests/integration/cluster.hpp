#pragma once
// A cluster on loopback for tests: the real tessel-scheduler and tessel-agent
// processes, temp DB and state dirs, fake hl-smi, REST helpers. Waiting is polling
// with deadlines.

#include <sys/types.h>

#include <csignal>
#include <functional>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tessel::itest {

// A child process with stdout/stderr in files; killed (SIGKILL) when destroyed
// unless released.
class Proc {
 public:
  Proc(std::vector<std::string> argv, std::map<std::string, std::string> extra_env, const std::string& out_prefix);
  ~Proc();
  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  int wait();  // Exit status (waitpid), reaps.
  std::string out() const;
  std::string err() const;
  std::optional<std::string> wait_line_with(const std::string& needle, std::chrono::milliseconds t) const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_, err_;
};

class Cluster {
 public:
  Cluster();
  ~Cluster();
  void start_scheduler();  // Reuses the same DB on restart.
  void stop_scheduler(int sig = SIGKILL);
  // Starts (or restarts) agent `node` with its own state dir and the given fixture.
  void start_agent(const std::string& node, const std::string& fixture = "gaudi2-hl225-8.csv",
                   std::map<std::string, std::string> env = {});
  void kill_agent(const std::string& node, int sig = SIGKILL);
  Proc& agent(const std::string& node) { return *agents_.at(node); }
  std::string state_dir(const std::string& node) const { return root_ + "/agent-" + node; }
  std::string task_dir(const std::string& node, const std::string& job, int rank = 0) const;
  std::string log(const std::string& node, const std::string& job, int rank = 0, int local = 0) const;
  const std::string& root() const { return root_; }
  std::vector<std::string> scheduler_args;  // Extra flags for the next start_scheduler().
  int port() const { return port_; }

  // REST.
  nlohmann::json submit(const nlohmann::json& spec);  // Returns the job; asserts 201/200.
  nlohmann::json get(const std::string& path, int* status = nullptr);
  int post(const std::string& path, const nlohmann::json& body);
  std::optional<nlohmann::json> wait_job(const std::string& id, const std::vector<std::string>& states,
                                         std::chrono::milliseconds t = std::chrono::seconds(20));
  bool wait_node_state(const std::string& node, const std::string& state,
                       std::chrono::milliseconds t = std::chrono::seconds(20));

 private:
  std::string root_;
  int port_ = 0;
  int master_port_ = 0;  // Start of this cluster's MASTER_PORT range (kept across scheduler restarts).
  std::unique_ptr<Proc> scheduler_;
  std::map<std::string, std::unique_ptr<Proc>> agents_;
  int sched_starts_ = 0;
  std::map<std::string, int> agent_starts_;
};

bool poll_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout);
std::map<std::string, std::string> parse_env_dump(const std::string& text);
bool pid_alive(pid_t pid);

}  // namespace tessel::itest
