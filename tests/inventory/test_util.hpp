#pragma once
// Helpers for the inventory tests: fixture paths, env vars, sysfs status files.
// Temp dirs and file helpers come from the test kit (tests/support).

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "files.hpp"
#include "temp_dir.hpp"

namespace tessel::agent::testing {

inline std::string fixture_path(const std::string& rel) { return std::string(TESSEL_FIXTURES_DIR) + "/" + rel; }

using tessel::testkit::TempDir;
using tessel::testkit::write_file;

inline std::string fixture(const std::string& rel) { return tessel::testkit::read_file(fixture_path(rel)); }

// Sets an environment variable for the life of the object (children inherit it).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old, had_ = true;
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

// Writes <root>/class/accel/accel<index>/device/status.
inline void write_sysfs_status(const std::filesystem::path& root, int index, const std::string& status) {
  write_file(root / "class" / "accel" / ("accel" + std::to_string(index)) / "device" / "status", status);
}

}  // namespace tessel::agent::testing
