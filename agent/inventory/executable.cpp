#include "tessel/agent/executable.hpp"

#include <unistd.h>

#include <cstdlib>

namespace tessel::agent {

namespace fs = std::filesystem;

static bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

Result<fs::path> resolve_executable(const std::string& label, const std::string& name_or_path,
                                    const std::string& path_env) {
  if (name_or_path.empty()) return Error{label + ": empty path"};
  if (name_or_path.find('/') != std::string::npos) {
    fs::path p(name_or_path);
    std::error_code ec;
    if (!fs::exists(p, ec)) return Error{label + " not found at " + name_or_path};
    if (!is_executable_file(p)) return Error{label + " at " + name_or_path + " is not an executable file"};
    return p;
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    fs::path p = fs::path(dir) / name_or_path;
    if (is_executable_file(p)) return p;
    start = end + 1;
  }
  return Error{label + " not found in PATH"};
}

std::string process_path_env() {
  const char* p = std::getenv("PATH");
  return p ? p : "";
}

}  // namespace tessel::agent
