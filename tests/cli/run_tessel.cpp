#include "run_tessel.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include <boost/process.hpp>

#include "tessel/api/child_env.hpp"

namespace tessel::cli::testing {

namespace bp = boost::process;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}
}  // namespace

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tessel-cli-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Outcome run_binary(const std::string& exe, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env) {
  TempDir dir;
  std::string out_path = dir.path() + "/out";
  std::string err_path = dir.path() + "/err";
  // This process's environment without TESSEL_*, then the test's variables.
  std::map<std::string, std::string> vars;
  for (char** p = environ; *p != nullptr; ++p) {
    std::string entry(*p);
    auto eq = entry.find('=');
    if (eq == std::string::npos || entry.rfind("TESSEL_", 0) == 0) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : env) vars[k] = v;
  const tessel::api::EnvBlock e(vars);
  bp::child c(exe, bp::args(args), e, bp::std_in<bp::null, bp::std_out> out_path, bp::std_err > err_path);
  c.wait();  // The binary bounds its own HTTP calls; ctest's TIMEOUT bounds a hang.
  return Outcome{c.exit_code(), slurp(out_path), slurp(err_path)};
}

}  // namespace tessel::cli::testing
