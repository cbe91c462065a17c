#include "cluster.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>

#include "files.hpp"
#include "ports.hpp"

namespace tessel::itest {

using nlohmann::json;
using namespace std::chrono_literals;

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

Cluster::Cluster() = default;

Cluster::~Cluster() {
  // Agents first (tasks' supervisors are detached: stop them through their state).
  agents_.clear();
  for (const auto& e : std::filesystem::directory_iterator(root_.path())) {
    if (e.path().filename().string().rfind("agent-", 0) != 0) continue;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(e.path() / "tasks", ec)) {
      auto j = json::parse(testkit::read_file(t.path() / "supervisor.json"), nullptr, false);
      if (j.is_object() && !std::filesystem::exists(t.path() / "result.json")) ::kill(j["pid"].get<int>(), SIGTERM);
    }
  }
  scheduler_.kill9();
}

void Cluster::start_scheduler() {
  // Each test cluster draws its MASTER_PORT range (that port and the 19 above it) from
  // a port free now, so clusters of tests running in parallel on this host (ctest -j)
  // do not hand the same rendezvous port to two jobs.
  if (master_port_ == 0) master_port_ = testkit::free_port();
  std::string prefix = root_.str("scheduler" + std::to_string(sched_starts_++));
  testkit::SchedulerOptions o;
  o.bin = TESSEL_SCHEDULER_BIN;
  o.listen = port_ ? "127.0.0.1:" + std::to_string(port_) : "127.0.0.1:0";
  o.db = root_.str("sched.db");
  o.args = {"--heartbeat-timeout", std::to_string(heartbeat_timeout_s), "--master-port-range",
            std::to_string(master_port_) + "-" + std::to_string(std::min(master_port_ + 19, 65535))};
  o.args.insert(o.args.end(), scheduler_args.begin(), scheduler_args.end());
  o.stdout_path = prefix + ".out";
  o.stderr_path = prefix + ".err";
  scheduler_ = testkit::start_scheduler(o);
  const int port = scheduler_.wait_listening(20s);
  ASSERT_GT(port, 0) << scheduler_.stderr_text();
  port_ = port;
}

void Cluster::stop_scheduler(int sig) {
  scheduler_.signal(sig);
  scheduler_.wait();
}

void Cluster::start_agent(const std::string& node, const std::string& fixture, std::map<std::string, std::string> env) {
  agents_.erase(node);
  testkit::AgentOptions o;
  o.hl_smi = FAKE_HL_SMI_BIN;
  o.hl_smi_fixture = std::string(TESSEL_FIXTURES_DIR) + "/hl-smi/" + fixture;
  o.env = std::move(env);
  launch_agent(node, std::move(o));
}

void Cluster::start_vendor_agent(const std::string& node, const std::string& vendor, std::vector<std::string> tool_args,
                                 std::map<std::string, std::string> env) {
  agents_.erase(node);
  testkit::AgentOptions o;
  o.vendor = vendor;
  o.hl_smi = "/nonexistent/hl-smi";
  o.args = std::move(tool_args);
  o.env = std::move(env);
  launch_agent(node, std::move(o));
}

void Cluster::start_with_vendor(const std::string& node, const VendorTool& tool) {
  start_scheduler();
  std::vector<std::string> args;
  if (!tool.flag.empty()) args = {tool.flag, tool.fake};
  args.insert(args.end(), tool.args.begin(), tool.args.end());
  std::map<std::string, std::string> env;
  if (!tool.fixture_var.empty()) env[tool.fixture_var] = std::string(TESSEL_FIXTURES_DIR) + "/" + tool.fixture;
  start_vendor_agent(node, tool.vendor, std::move(args), std::move(env));
  ASSERT_TRUE(wait_node_state(node, "ready"));
}

std::optional<Cluster::EnvRun> Cluster::run_and_read_env(const std::string& node, const json& spec) {
  const json job = submit(spec);
  auto done = wait_job(job.value("id", ""), {"succeeded", "failed"});
  if (!done) return std::nullopt;
  if ((*done)["state"] != "succeeded") {
    ADD_FAILURE() << "job did not succeed: " << done->dump();
    return std::nullopt;
  }
  EnvRun run{*done, (*done)["allocations"][0]["indices"].get<std::vector<int>>(), {}};
  run.env = parse_env_dump(log(node, job["id"]));
  return run;
}

void Cluster::expect_waits(const json& spec, const std::string& needle) {
  const json job = submit(spec);
  auto j = wait_reason(job.value("id", ""), needle);
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["state"], "pending") << j->dump();
}

void Cluster::launch_agent(const std::string& node, testkit::AgentOptions o) {
  o.bin = TESSEL_AGENT_BIN;
  o.scheduler_url = "http://127.0.0.1:" + std::to_string(port_);
  o.node = node;
  o.state_dir = state_dir(node);
  if (std::find(agent_args.begin(), agent_args.end(), "--heartbeat-interval") == agent_args.end())
    o.args.insert(o.args.end(), {"--heartbeat-interval", "0.3"});
  o.args.insert(o.args.end(), agent_args.begin(), agent_args.end());
  const std::string prefix = root_.str("agent-" + node + "-" + std::to_string(agent_starts_[node]++));
  o.stdout_path = prefix + ".out";
  o.stderr_path = prefix + ".err";
  testkit::Child p = testkit::start_agent(o);
  ASSERT_TRUE(p.wait_line_with("listening on", 20s)) << p.stderr_text();
  agents_[node] = std::move(p);
}

void Cluster::kill_agent(const std::string& node, int sig) {
  agents_.at(node).signal(sig);
  if (sig == SIGKILL || sig == SIGTERM) agents_.at(node).wait();
}

std::string Cluster::task_dir(const std::string& node, const std::string& job, int rank) const {
  return state_dir(node) + "/tasks/" + job + ".0." + std::to_string(rank);
}

std::string Cluster::log(const std::string& node, const std::string& job, int rank, int local) const {
  return testkit::read_file(task_dir(node, job, rank) + "/rank" + std::to_string(local) + ".log");
}

testkit::RestClient Cluster::rest() const {
  testkit::RestClient c(port_);
  c.set_token(api_token);
  return c;
}

json Cluster::get(const std::string& path, int* status) {
  auto r = rest().get(path);
  if (status) *status = r.status;
  return r.status ? r.body : json();
}

int Cluster::post(const std::string& path, const json& body) { return rest().post(path, body).status; }

json Cluster::submit(const json& spec) {
  auto r = rest().post("/v1/jobs", spec);
  EXPECT_TRUE(r.status / 100 == 2) << (r.status ? r.text : std::string("no answer"));
  return r.status ? r.body : json();
}

std::optional<json> Cluster::wait_job(const std::string& id, const std::vector<std::string>& states,
                                      std::chrono::milliseconds t) {
  std::optional<json> job;
  json last;
  bool ok = eventually(
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

std::optional<json> Cluster::wait_reason(const std::string& id, const std::string& needle,
                                         std::chrono::milliseconds t) {
  json last;
  const bool ok = eventually(
      [&] {
        last = get("/v1/jobs/" + id);
        return last.is_object() && last.value("reason", "").find(needle) != std::string::npos;
      },
      t);
  if (!ok) ADD_FAILURE() << "job " << id << "'s reason never mentioned '" << needle << "'; last: " << last.dump();
  return ok ? std::optional<json>(last) : std::nullopt;
}

bool Cluster::wait_node_state(const std::string& node, const std::string& state, std::chrono::milliseconds t) {
  return eventually(
      [&] {
        auto n = get("/v1/nodes/" + node);
        return n.is_object() && n.value("state", "") == state;
      },
      t);
}

}  // namespace tessel::itest
