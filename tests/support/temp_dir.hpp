#pragma once
// Temporary directories for tests, removed with their contents when the object goes.

#include <filesystem>
#include <string>

namespace tessel::testkit {

// A fresh directory "<prefix>-XXXXXX" under the system temp dir, removed with its
// contents on destruction (kept when TESSEL_KEEP_TEST_DIRS is set, for debugging).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "tessel-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The directory (or `child` inside it) as a string.
  std::string str(const std::string& child = "") const {
    return child.empty() ? path_.string() : (path_ / child).string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace tessel::testkit
