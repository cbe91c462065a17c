// testkit: command lines of the scheduler and agent programs.
#include "binaries.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace tessel::testkit {

Child start_scheduler(const SchedulerOptions& o) {
  ChildOptions c;
  c.argv = {o.bin, "--listen", o.listen, "--db", o.db};
  c.argv.insert(c.argv.end(), o.args.begin(), o.args.end());
  c.stdout_path = o.stdout_path;
  c.stderr_path = o.stderr_path;
  c.rlimit_fsize_bytes = o.rlimit_fsize_bytes;
  c.nofile_soft = o.nofile_soft;
  c.nofile_hard = o.nofile_hard;
  std::error_code ec;
  if (!o.stdout_path.empty()) std::filesystem::remove(o.stdout_path, ec);
  return Child(std::move(c));
}

Child start_agent(const AgentOptions& o) {
  ChildOptions c;
  c.argv = o.prefix;
  for (const std::string& a :
       {o.bin, std::string("--scheduler"), o.scheduler_url, std::string("--node"), o.node, std::string("--address"),
        o.address, std::string("--listen"), o.listen, std::string("--state-dir"), o.state_dir, std::string("--vendor"),
        o.vendor, std::string("--hl-smi"), o.hl_smi})
    c.argv.push_back(a);
  c.argv.insert(c.argv.end(), o.args.begin(), o.args.end());
  // An agent running as root refuses to start without --run-as. Tests that run as
  // root (CI) and name no user run their jobs as root, as they did before that default.
  if (::geteuid() == 0 && std::find(o.args.begin(), o.args.end(), "--run-as") == o.args.end())
    c.argv.insert(c.argv.end(), {"--run-as", "root"});
  // Tests share the machine's cgroups (and may run without root): agents fence nothing
  // unless a test asks for it (tests/integration/cluster_isolation_test.cpp).
  if (std::find(o.args.begin(), o.args.end(), "--isolation") == o.args.end())
    c.argv.insert(c.argv.end(), {"--isolation", "none"});
  c.env = o.env;
  c.env["FAKE_HL_SMI_FIXTURE"] = o.hl_smi_fixture;
  c.stdout_path = o.stdout_path;
  c.stderr_path = o.stderr_path;
  std::error_code ec;
  if (!o.stdout_path.empty()) std::filesystem::remove(o.stdout_path, ec);
  return Child(std::move(c));
}

}  // namespace tessel::testkit
