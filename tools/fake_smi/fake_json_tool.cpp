// A stand-in for a vendor tool whose inventory command prints a recorded output as is
// (amd-smi's JSON, npu-smi's text table). It replays the file named by
// $<PREFIX>FIXTURE, byte for byte.
//   amd-smi static [--asic --bus --vram --driver ...] --json    (PREFIX FAKE_AMD_SMI_)
//   npu-smi info                                                (PREFIX FAKE_NPU_SMI_)
//   xpu-smi discovery -j                                        (PREFIX FAKE_XPU_SMI_)
//   neuron-ls -j                                                (PREFIX FAKE_NEURON_LS_)
//   mthreads-gmi -q -j                                          (PREFIX FAKE_MTHREADS_GMI_)
//   cnmon info ... -j        writes cnmon_info.json in its working directory, as cnmon
//                            does (FAKE_TOOL_OUTPUT_FILE)      (PREFIX FAKE_CNMON_)
// A tool whose inventory also reads the cards' live readings with a second command
// (FAKE_TOOL_TELEMETRY_COMMAND) replays $<PREFIX><T>FIXTURE for it, with its own mode
// from $<PREFIX><T>MODE[_FILE], T being FAKE_TOOL_TELEMETRY_ENV:
//   amd-smi metric ... --json                                   (T METRIC_)
//   xpu-smi dump ...                                            (T DUMP_)
// When $<PREFIX><T>FIXTURE is unset that command fails (exit 2), as a tool too old for
// it would: tests that set only the inventory fixture see cards without readings.
// The mode comes from the file named by $<PREFIX>MODE_FILE when it exists (so a test
// can change the behaviour of a tool a running agent calls), else from $<PREFIX>MODE,
// else "normal":
//   normal   print the fixture
//   hang     never return (until killed)
//   fail     print an error on stderr and exit 3
//   garbage  print text that is neither JSON nor a table, exit 0
//   crash    die of SIGSEGV

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fake_mode.hpp"

namespace {

const char* const kTool = FAKE_TOOL_NAME;
const char* const kEnvPrefix = FAKE_TOOL_ENV_PREFIX;

int usage(const std::string& why) {
  std::cerr << kTool << " (fake): " << why << "\n";
  return 2;
}

// Acts out every mode but "normal"; returns -1 for "normal".
int misbehave(const std::string& m) {
  if (m == "hang") {
    for (;;) ::pause();
  }
  if (m == "fail") {
    std::cerr << kTool << ": failed to open device (fake failure)\nsecond line of detail\n";
    return 3;
  }
  if (m == "garbage") {
    std::cout << "#!@ this is not json\n{\"gpu\": \x01\x02 binary junk\n";
    return 0;
  }
  if (m == "crash") {
    std::signal(SIGSEGV, SIG_DFL);  // Not a sanitizer's handler: die as a real crash would.
    std::raise(SIGSEGV);
    return 139;
  }
  if (m != "normal") return usage("unknown mode \"" + m + "\"");
  return -1;
}

// The environment prefix of the command in `args`: kEnvPrefix for the inventory
// command, kEnvPrefix + the telemetry infix for the telemetry one; "" for neither.
std::string command_prefix(const std::vector<std::string>& args) {
  const std::string flag = FAKE_TOOL_FLAG;  // What the command must also carry, if anything.
  const bool flagged = flag.empty() || std::find(args.begin(), args.end(), flag) != args.end();
  if (!args.empty() && args[0] == FAKE_TOOL_COMMAND && flagged) return kEnvPrefix;
#ifdef FAKE_TOOL_TELEMETRY_COMMAND
  if (!args.empty() && args[0] == FAKE_TOOL_TELEMETRY_COMMAND) return std::string(kEnvPrefix) + FAKE_TOOL_TELEMETRY_ENV;
#endif
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string flag = FAKE_TOOL_FLAG;
  const std::string prefix = command_prefix(args);
  if (prefix.empty())
    return usage(std::string("only \"") + FAKE_TOOL_COMMAND + (flag.empty() ? "" : " ... " + flag) + "\" is supported");
  if (int rc = misbehave(fake_tool::mode(prefix)); rc >= 0) return rc;
  const std::string path = fake_tool::env(prefix, "FIXTURE");
  if (path.empty()) return usage("set " + prefix + "FIXTURE");
  std::string text;
  if (!fake_tool::read_file(path, text)) return usage("cannot read fixture " + path);
#ifdef FAKE_TOOL_OUTPUT_FILE
  std::ofstream file(FAKE_TOOL_OUTPUT_FILE, std::ios::binary);
  if (!(file << text)) return usage(std::string("cannot write ") + FAKE_TOOL_OUTPUT_FILE);
  std::cout << "Generated " << FAKE_TOOL_OUTPUT_FILE << "\n";
#else
  std::cout << text;
#endif
  return 0;
}
