// Helpers for the worker tests: temp folders, the text fixture, and child
// processes whose stdout is read line by line with a deadline (never sleep).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tessel::workers::testing {

// A fresh folder under $TMPDIR, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::filesystem::path text_fixture();

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal or timed out
  std::string out;
  std::string err;
};

// Runs argv to completion (killed after `timeout`), capturing output.
RunResult run_process(const std::vector<std::string>& argv, std::chrono::seconds timeout,
                      const std::vector<std::string>& extra_env = {});

// A running child with its stdout readable line by line. Killed (SIGKILL)
// and reaped on destruction if still running.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Next stdout line, or nullopt on EOF or when the deadline passes.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // Sends `signal` and waits up to `timeout`; returns the wait status or -1.
  int stop(int signal, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

}  // namespace tessel::workers::testing
