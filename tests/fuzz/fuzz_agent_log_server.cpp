// libFuzzer: the agent's log server (tessel::agent::LogServer, the only HTTP the
// agent serves) over loopback, both as the scheduler reaches it and as anyone else
// would. The state dir holds one ended task with a log for local ranks 0 and 1.
// An input whose first byte is even is the rest of a request for
//   GET /v1/tasks/<its first line> HTTP/1.1
// sent with the scheduler's credential, its remaining lines as further headers, so
// task ids, ranks, offsets and follow flags are fuzzed past the credential check; an
// odd first byte sends the rest as raw bytes, with no credential. The server must
// neither crash nor answer anything that is not an HTTP response, and each answer
// must end (the task has ended, so a followed log ends too).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "loopback_exchange.hpp"
#include "tessel/agent/launcher.hpp"
#include "tessel/agent/log_server.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_manager.hpp"

namespace {

using namespace tessel::agent;

constexpr const char* kTask = "j-00000001.0.0";

struct NoLauncher : TaskLauncher {
  tessel::Result<int> launch(const std::string&) override { return tessel::Error::internal("fuzzing: no launches"); }
  tessel::Status stop(const SupervisorRecord&) override { return tessel::ok_status(); }
};

std::string make_root() {
  char templ[] = "/tmp/fuzz-agent-log-server-XXXXXX";
  if (::mkdtemp(templ) == nullptr) __builtin_trap();
  return templ;
}

struct Target {
  Target() : dir(make_root()) {
    if (!dir.init().ok()) __builtin_trap();
    TaskManagerConfig cfg;
    cfg.node = "n1";
    tasks = std::make_unique<TaskManager>(dir, launcher, cfg);
    // One assignment whose launch fails: the task is known and has ended.
    tessel::api::Assignment a;
    a.id = kTask;
    a.job_id = "j-00000001";
    a.nnodes = 1;
    a.master_addr = "127.0.0.1";
    a.master_port = 29500;
    a.spec.command = {"true"};
    tessel::api::DesiredState desired;
    desired.version = 1;
    desired.assignments.push_back(a);
    tasks->apply(desired, tessel::api::NodeInventory{});
    if (!tasks->known(kTask)) __builtin_trap();
    std::filesystem::create_directories(dir.task_dir(kTask));
    for (int rank = 0; rank < 2; ++rank) {
      std::ofstream log(dir.log_path(kTask, rank), std::ios::binary | std::ios::trunc);
      for (int line = 0; line < 2000; ++line) log << "rank " << rank << " line " << line << '\n';
    }
    logs = std::make_unique<LogServer>(dir, *tasks);
    auto started = logs->start("127.0.0.1:0");
    if (!started) __builtin_trap();
    port = *started;
    logs->set_scheduler_key(key);
  }
  NoLauncher launcher;
  StateDir dir;
  std::unique_ptr<TaskManager> tasks;
  std::unique_ptr<LogServer> logs;
  int port = 0;
  const std::string key = std::string(64, 'k');
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target t;
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0) {
    tessel::fuzzing::exchange(t.port, rest, "fuzz_agent_log_server");
    return 0;
  }
  const size_t eol = rest.find('\n');
  const std::string_view target = rest.substr(0, eol);
  const std::string_view headers = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
  std::string request = "GET /v1/tasks/";
  request.append(target);
  request += " HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer " + t.key + "\r\n";
  request.append(headers);
  request += "\r\n\r\n";
  tessel::fuzzing::exchange(t.port, request, "fuzz_agent_log_server");
  return 0;
}
