#pragma once
// The `tessel` command line: parses arguments (CLI11), talks to the scheduler and
// prints. main() only builds a real Environment and calls run().
//
// Exit codes:
//   0    success
//   1    the server said no, the connection failed, or a job/node was not found
//   2    usage error (unknown flag, bad value, missing argument)
//   124  `tessel wait --timeout` ran out before the job finished
//   `tessel wait` otherwise exits with the job's outcome: 0 succeeded; failed -> its
//   exit code (1 when it has none or it is 0, capped to 1..255); cancelled -> 1.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tessel::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitWaitTimeout = 124;

inline constexpr const char* kDefaultServer = "http://127.0.0.1:7450";

// Everything the CLI reads from or does to the world, so tests can drive it.
struct Environment {
  std::ostream& out;
  std::ostream& err;
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::function<int64_t()> now_unix_ms;                  // Wall clock, for ages.
  std::function<std::chrono::milliseconds()> monotonic;  // For deadlines.
  std::function<void(std::chrono::milliseconds)> sleep;  // Backoff in `wait` and `logs -f`.
  std::string cwd;                                       // For relative --workdir.
};

// Runs one command line (args[0] is the program name). Never throws.
int run(const std::vector<std::string>& args, Environment& env);

}  // namespace tessel::cli
