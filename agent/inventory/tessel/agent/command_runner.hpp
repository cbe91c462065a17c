#pragma once
// Running a vendor tool: the narrow interface the inventory uses, so tests can inject
// canned results, and the real implementation on Boost.Process.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::agent {

struct CommandResult {
  bool timed_out = false;        // Killed (with its process group) at the deadline.
  std::optional<int> exit_code;  // Set when the process exited on its own.
  std::optional<int> signal;     // Set when a signal ended it (SIGKILL after a timeout included).
  std::string out;               // Captured stdout (cut at kMaxOutput bytes).
  std::string err;               // Captured stderr (cut at kMaxOutput bytes).
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (an executable path; no PATH search, no shell) with argv[1..] as its
  // arguments, stdin from /dev/null. Waits at most `timeout`, then kills the process
  // group and reports timed_out. Returns an Error only when the process could not be
  // started. Implementations must be safe to call from several threads at once.
  virtual Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
};

// The real runner: Boost.Process child in its own process group, stdout and stderr
// read through async pipes on a private io_context per call.
class ProcessRunner final : public CommandRunner {
 public:
  static constexpr size_t kMaxOutput = 4 << 20;
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;
};

}  // namespace tessel::agent
