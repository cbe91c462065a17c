#pragma once
// Starting the real tessel-scheduler and tessel-agent programs in tests, each on
// port 0 (the test reads the port with Child::wait_listening()).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"

namespace tessel::testkit {

// BIN --listen LISTEN --db DB ARGS...
struct SchedulerOptions {
  std::string bin;  // The test's tessel-scheduler.
  std::string listen = "127.0.0.1:0";
  std::string db;
  std::vector<std::string> args;         // Further flags.
  std::string stdout_path, stderr_path;  // stdout is emptied first: its "listening on" line is this start's.
  std::optional<long> rlimit_fsize_bytes;
  rlim_t nofile_soft = 0, nofile_hard = 0;  // As in ChildOptions.
};
Child start_scheduler(const SchedulerOptions& o);

// PREFIX... BIN --scheduler URL --node NODE --address ADDRESS --listen LISTEN
//   --state-dir DIR --vendor habana --hl-smi HL_SMI ARGS... [--run-as root when the test
//   runs as root and ARGS name no user], with
//   FAKE_HL_SMI_FIXTURE=HL_SMI_FIXTURE in its environment.
struct AgentOptions {
  std::vector<std::string> prefix;  // e.g. {"ip", "netns", "exec", NS}.
  std::string bin;                  // The test's tessel-agent.
  std::string scheduler_url;
  std::string node;
  std::string address = "127.0.0.1";
  std::string listen = "127.0.0.1:0";
  std::string state_dir;
  std::string vendor = "habana";           // --vendor.
  std::string hl_smi;                      // The fake hl-smi.
  std::string hl_smi_fixture;              // The recorded output it plays back.
  std::vector<std::string> args;           // Further flags.
  std::map<std::string, std::string> env;  // Further variables.
  std::string stdout_path, stderr_path;    // stdout is emptied first, as for the scheduler.
};
Child start_agent(const AgentOptions& o);

}  // namespace tessel::testkit
