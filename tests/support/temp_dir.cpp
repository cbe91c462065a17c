// testkit::TempDir: mkdtemp, then remove_all.
#include "temp_dir.hpp"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace tessel::testkit {

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (std::getenv("TESSEL_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace tessel::testkit
