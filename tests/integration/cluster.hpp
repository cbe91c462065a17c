#pragma once
// A cluster on loopback for tests: the real tessel-scheduler and tessel-agent
// processes (started with the test kit), temp DB and state dirs, fake hl-smi, REST
// helpers. Waiting is polling with deadlines.

#include <csignal>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "binaries.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "rest_client.hpp"
#include "sanitized.hpp"
#include "temp_dir.hpp"

namespace tessel::itest {

using testkit::eventually;
using testkit::kSanitized;
using testkit::pid_alive;

class Cluster {
 public:
  Cluster();
  ~Cluster();
  void start_scheduler();  // Reuses the same DB on restart.
  void stop_scheduler(int sig = SIGKILL);
  // Starts (or restarts) agent `node` with its own state dir and the given fixture.
  void start_agent(const std::string& node, const std::string& fixture = "gaudi2-hl225-8.csv",
                   std::map<std::string, std::string> env = {});
  // Starts agent `node` on another vendor's fake tool: --vendor `vendor`, `tool_args`
  // (e.g. {"--amd-smi", PATH}) and `env` (the fake's fixture variable).
  void start_vendor_agent(const std::string& node, const std::string& vendor, std::vector<std::string> tool_args,
                          std::map<std::string, std::string> env);
  // Another vendor's fake tool as the agent runs it: --vendor `vendor`, `flag` naming
  // the fake binary `fake`, and `fixture` (under tests/fixtures) in the fake's
  // environment variable `fixture_var`; `args`: more agent flags. A vendor read without
  // a tool (TPU: a PCI scan) leaves `flag` and `fixture_var` empty.
  struct VendorTool {
    std::string vendor, flag, fake, fixture_var, fixture;
    std::vector<std::string> args = {};
  };
  // Starts the scheduler and agent `node` on `tool`, and waits until the node is ready.
  void start_with_vendor(const std::string& node, const VendorTool& tool);
  // A finished job whose command printed its environment: the job, the device indices
  // of its first allocation and the environment rank 0's first task saw.
  struct EnvRun {
    nlohmann::json job;
    std::vector<int> indices;
    std::map<std::string, std::string> env;
  };
  // Submits `spec` (a command that prints its environment, e.g. /usr/bin/env), waits
  // until it succeeds and reads what it printed on `node`. nullopt, with a test failure,
  // when the job does not succeed.
  std::optional<EnvRun> run_and_read_env(const std::string& node, const nlohmann::json& spec);
  // Submits `spec` and expects it to stay pending with a reason that mentions `needle`.
  void expect_waits(const nlohmann::json& spec, const std::string& needle);
  void kill_agent(const std::string& node, int sig = SIGKILL);
  testkit::Child& agent(const std::string& node) { return agents_.at(node); }
  std::string state_dir(const std::string& node) const { return root_.str("agent-" + node); }
  std::string task_dir(const std::string& node, const std::string& job, int rank = 0) const;
  // The working directory of a job without a `workdir` of its own.
  std::string work_dir(const std::string& node, const std::string& job, int rank = 0) const {
    return task_dir(node, job, rank) + "/work";
  }
  std::string log(const std::string& node, const std::string& job, int rank = 0, int local = 0) const;
  std::string root() const { return root_.str(); }
  std::vector<std::string> scheduler_args;  // Extra flags for the next start_scheduler().
  // The next start_scheduler()'s --heartbeat-timeout: 2 s, or 5 s in a sanitizer
  // build, whose agents on a loaded machine have gone more than 2 s between heartbeats
  // (CI: "node n1 down" under a running job).
  int heartbeat_timeout_s = kSanitized ? 5 : 2;
  std::vector<std::string> agent_args;  // Extra flags for the next start_agent().
  std::string api_token;                // Bearer token of the REST helpers ("": none).
  int port() const { return port_; }
  pid_t scheduler_pid() const { return scheduler_.pid(); }

  // REST.
  nlohmann::json submit(const nlohmann::json& spec);  // Returns the job; asserts 201/200.
  nlohmann::json get(const std::string& path, int* status = nullptr);
  int post(const std::string& path, const nlohmann::json& body);
  testkit::RestClient rest() const;  // To port(), with api_token.
  std::optional<nlohmann::json> wait_job(const std::string& id, const std::vector<std::string>& states,
                                         std::chrono::milliseconds t = std::chrono::seconds(20));
  // The job once its pending reason mentions `needle` (nullopt, and a failure, if never).
  std::optional<nlohmann::json> wait_reason(const std::string& id, const std::string& needle,
                                            std::chrono::milliseconds t = std::chrono::seconds(10));
  bool wait_node_state(const std::string& node, const std::string& state,
                       std::chrono::milliseconds t = std::chrono::seconds(20));

 private:
  void launch_agent(const std::string& node, testkit::AgentOptions o);

  testkit::TempDir root_{"tessel-it"};  // First: removed after every process is gone.
  int port_ = 0;
  int master_port_ = 0;  // Start of this cluster's MASTER_PORT range (kept across scheduler restarts).
  testkit::Child scheduler_;
  std::map<std::string, testkit::Child> agents_;
  int sched_starts_ = 0;
  std::map<std::string, int> agent_starts_;
};

std::map<std::string, std::string> parse_env_dump(const std::string& text);

}  // namespace tessel::itest
