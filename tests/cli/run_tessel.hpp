#pragma once
// Runs the real `tessel` binary (path compiled in as TESSEL_CLI_BINARY) with a
// clean environment (no inherited TESSEL_* variables) and captures its output.

#include <map>
#include <string>
#include <vector>

namespace tessel::cli::testing {

struct Outcome {
  int rc = -1;
  std::string out;
  std::string err;
};

Outcome run_binary(const std::string& exe, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {});

inline Outcome run_tessel(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return run_binary(TESSEL_CLI_BINARY, args, env);
}

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessel::cli::testing
