#pragma once
// FakeToolTest: the base of a one-call vendor tool's inventory tests (amd-smi, npu-smi,
// xpu-smi, neuron-ls, mthreads-gmi, cnmon): the real runner, and the tool's fake
// (tools/fake_smi) replaying a fixture in normal mode for the life of the test.

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_config.hpp"
#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent::testing {

// Which tool: the config member naming it, its fake's path, the prefix of the fake's
// variables (FAKE_AMD_SMI_FIXTURE, ..._MODE), and its --vendor name.
struct FakeTool {
  std::string InventoryConfig::*path;
  const char* fake;
  const char* env;
  const char* vendor_name;
};

inline const FakeTool kAmdSmi{&InventoryConfig::amd_smi, FAKE_AMD_SMI_PATH, "FAKE_AMD_SMI", "amd"};
inline const FakeTool kNpuSmi{&InventoryConfig::npu_smi, FAKE_NPU_SMI_PATH, "FAKE_NPU_SMI", "ascend"};
inline const FakeTool kXpuSmi{&InventoryConfig::xpu_smi, FAKE_XPU_SMI_PATH, "FAKE_XPU_SMI", "intel"};
inline const FakeTool kNeuronLs{&InventoryConfig::neuron_ls, FAKE_NEURON_LS_PATH, "FAKE_NEURON_LS", "neuron"};
inline const FakeTool kMthreadsGmi{&InventoryConfig::mthreads_gmi, FAKE_MTHREADS_GMI_PATH, "FAKE_MTHREADS_GMI",
                                   "mthreads"};
inline const FakeTool kCnmon{&InventoryConfig::cnmon, FAKE_CNMON_PATH, "FAKE_CNMON", "cambricon"};

class FakeToolTest : public ::testing::Test {
 protected:
  FakeToolTest(const FakeTool& tool, const std::string& fixture)
      : tool_(tool), fixture_(var("_FIXTURE"), fixture_path(fixture)), mode_(var("_MODE"), "normal") {}

  // The fake, a 10 s timeout, no PATH lookups.
  InventoryConfig config() const {
    InventoryConfig c;
    c.*(tool_.path) = tool_.fake;
    c.timeout = std::chrono::seconds(10);
    c.path_env = "";
    return c;
  }
  // What `c` reads through `--vendor NAME`, or its error message; "(ok)" when it reads.
  std::string read_error(const InventoryConfig& c) {
    auto source = make_inventory_source(tool_.vendor_name, runner_, c);
    if (!source.ok()) return "no source: " + source.error().message;
    auto r = (*source)->read();
    return r.ok() ? std::string("(ok)") : r.error().message;
  }
  // The fake's variable `suffix` ("_MODE": FAKE_AMD_SMI_MODE).
  std::string var(const char* suffix) const { return std::string(tool_.env) + suffix; }
  const FakeTool& tool() const { return tool_; }

  ProcessRunner runner_;

 private:
  FakeTool tool_;
  ScopedEnv fixture_;
  ScopedEnv mode_;
};

}  // namespace tessel::agent::testing
