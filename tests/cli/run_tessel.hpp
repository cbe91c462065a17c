#pragma once
// Runs the real `tessel` binary (path compiled in as TESSEL_CLI_BINARY) with a
// clean environment (no inherited TESSEL_* variables) and captures its output.

#include <map>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "temp_dir.hpp"

namespace tessel::cli::testing {

using testkit::TempDir;

// The binary bounds its own HTTP calls; ctest's TIMEOUT bounds a hang.
inline testkit::RunResult run_tessel(const std::vector<std::string>& args,
                                     const std::map<std::string, std::string>& env = {}) {
  testkit::ChildOptions o;
  o.argv = {TESSEL_CLI_BINARY};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.inherit_env = false;
  o.env = testkit::environment_without("TESSEL_");
  for (const auto& [k, v] : env) o.env[k] = v;
  return testkit::run_process(o);
}

}  // namespace tessel::cli::testing
