// The chaos cluster: the test kit's scheduler and agent starts with the chaos tests' flags and files.
#include "chaos_cluster.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <map>

namespace tessel::chaos {

TempDir::~TempDir() {
  // Supervisors and tasks are detached from the agent; they all name this dir.
  for (int i = 0; i < 3 && testkit::kill_processes_mentioning(str()) > 0; ++i) {
  }
}

int run_and_wait(std::vector<std::string> argv, const std::string& log) {
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"}) {
      if (::access((dir + argv[0]).c_str(), X_OK) == 0) {
        argv[0] = dir + argv[0];
        break;
      }
    }
  }
  ChildOptions o;
  o.argv = std::move(argv);
  o.stdout_path = log;
  o.stderr_path = log;
  Child c(std::move(o));
  if (!eventually([&] { return !c.running(); }, 20s)) return -1;  // ~Child kills it.
  const int st = c.wait();
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// ---- cluster ---------------------------------------------------------------

namespace {
// $NAME when set (to run against other builds or installed binaries), else `dflt`.
std::string env_or(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}
}  // namespace

std::string scheduler_bin() { return env_or("TESSEL_CHAOS_SCHEDULER", TESSEL_SCHEDULER_BIN); }
std::string agent_bin() { return env_or("TESSEL_CHAOS_AGENT", TESSEL_AGENT_BIN); }
std::string fake_hl_smi_bin() { return env_or("TESSEL_CHAOS_HL_SMI", FAKE_HL_SMI_BIN); }
std::string gaudi2_fixture() { return std::string(TESSEL_FIXTURES_DIR) + "/hl-smi/gaudi2-hl225-8.csv"; }

Child start_scheduler(const TempDir& dir, const std::string& tag, const std::string& db, const std::string& listen,
                      std::vector<std::string> extra, std::optional<long> rlimit_fsize) {
  testkit::SchedulerOptions o;
  o.bin = scheduler_bin();
  o.listen = listen;
  o.db = db;
  o.args = {"--log-level", "info"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  o.stdout_path = dir.str("scheduler-" + tag + ".out");
  o.stderr_path = dir.str("scheduler-" + tag + ".log");
  o.rlimit_fsize_bytes = rlimit_fsize;
  return testkit::start_scheduler(o);
}

Child start_agent(const TempDir& dir, const AgentSpec& s) {
  testkit::AgentOptions o;
  o.prefix = s.prefix;
  o.bin = agent_bin();
  o.scheduler_url = s.scheduler_url;
  o.node = s.node;
  o.address = s.address;
  o.listen = s.listen;
  o.state_dir = dir.str(s.node);
  o.hl_smi = fake_hl_smi_bin();
  o.hl_smi_fixture = gaudi2_fixture();
  o.args = {"--sysfs-root", dir.str("sysfs"), "--heartbeat-interval", std::to_string(s.heartbeat_interval_s),
            "--log-level",  "debug"};
  if (!s.mode_file.empty()) o.env["FAKE_HL_SMI_MODE_FILE"] = s.mode_file;
  o.stdout_path = dir.str("agent-" + s.node + ".out");
  o.stderr_path = dir.str("agent-" + s.node + ".log");
  std::error_code ec;
  fs::create_directories(dir.str("sysfs"), ec);
  return testkit::start_agent(o);
}

bool wait_nodes(const Api& api, const std::vector<std::string>& names, const std::string& state,
                std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        for (const auto& n : names) {
          auto node = api.node(n);
          if (!node || node->value("state", "") != state) return false;
        }
        return true;
      },
      timeout);
}

std::string find_double_booking(const std::vector<json>& jobs) {
  std::map<std::pair<std::string, int>, std::string> holder;
  for (const auto& j : jobs) {
    std::string st = j.value("state", "");
    if (st != "assigned" && st != "running") continue;
    for (const auto& a : j.value("allocations", json::array())) {
      for (const auto& m : a.value("module_ids", json::array())) {
        auto key = std::make_pair(a.value("node", ""), m.get<int>());
        auto [it, fresh] = holder.emplace(key, j.value("id", ""));
        if (!fresh)
          return key.first + " card " + std::to_string(key.second) + " held by " + it->second + " and " +
                 j.value("id", "");
      }
    }
  }
  return "";
}

json shell_job(const std::string& script, int devices, int max_retries) {
  return {{"command", {"/bin/sh", "-c", script}}, {"devices", devices}, {"max_retries", max_retries}};
}

}  // namespace tessel::chaos
