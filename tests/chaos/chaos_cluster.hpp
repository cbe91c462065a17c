#pragma once
// A real cluster for chaos tests: tessel-scheduler and tessel-agent child
// processes on loopback (ports 0), each in a temp dir, started with the test kit
// (tests/support), which also gives the REST client and `eventually`.
//
// Contracts:
// - Nothing here sleeps to wait for an outcome: `eventually` polls a predicate
//   until a deadline.
// - Every process started through `Child` is SIGKILLed and reaped by its
//   destructor. Task supervisors and tasks outlive agents on purpose, so
//   `TempDir`'s destructor SIGKILLs every process whose command line names the
//   temp dir (found by scanning /proc, by pid), then removes the dir.
// - Single-threaded use per object, except `Api`, which opens one connection
//   per call and may be shared by threads.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "binaries.hpp"
#include "child_process.hpp"
#include "eventually.hpp"
#include "files.hpp"
#include "rest_client.hpp"
#include "temp_dir.hpp"

namespace tessel::chaos {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using testkit::Child;
using testkit::ChildOptions;
using testkit::eventually;
using testkit::read_lines;
using Api = testkit::RestClient;

// A temp dir "tessel-chaos-NAME-XXXXXX", removed (with the processes that name
// it) on destruction.
class TempDir : public testkit::TempDir {
 public:
  explicit TempDir(const std::string& name) : testkit::TempDir("tessel-chaos-" + name) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
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

}  // namespace tessel::chaos
