// What every one-call vendor tool's inventory promises, run against each fake tool:
// a tool that fails, crashes, hangs, prints junk or nothing, or is not installed
// gives a one-line error naming the tool; `--vendor auto` finds it in PATH. Each
// vendor's own file tests what is particular to it (its fixtures, telemetry, cleanup).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

struct ToolCase {
  const char* tool;                    // "amd-smi": how messages name it.
  const char* env;                     // "FAKE_AMD_SMI": the fake's variables' prefix.
  const char* fake;                    // The fake's path.
  std::string InventoryConfig::*path;  // The config member naming the tool.
  const char* fixture;                 // A fixture the fake replays.
  const char* vendor_name;             // --vendor NAME.
  api::Vendor vendor;
  size_t devices;             // In the fixture.
  const char* garbage_error;  // When the tool prints junk.
  const char* empty_error;    // When it prints (or writes) nothing.
};

void PrintTo(const ToolCase& c, std::ostream* os) { *os << c.tool; }

class ToolContractTest : public ::testing::TestWithParam<ToolCase> {
 protected:
  InventoryConfig config() const {
    InventoryConfig c;
    c.*(GetParam().path) = GetParam().fake;
    c.timeout = 10s;
    c.path_env = "";
    return c;
  }
  std::string read_error(const InventoryConfig& c) {
    auto source = make_inventory_source(GetParam().vendor_name, runner_, c);
    if (!source.ok()) return "no source: " + source.error().message;
    auto r = (*source)->read();
    return r.ok() ? std::string("(ok)") : r.error().message;
  }
  std::string var(const char* suffix) const { return std::string(GetParam().env) + suffix; }
  std::string tool() const { return GetParam().tool; }

  ProcessRunner runner_;
  testing::TempDir files_;
  ScopedEnv fixture_{var("_FIXTURE"), testing::fixture_path(GetParam().fixture)};
  ScopedEnv mode_{var("_MODE"), "normal"};
};

TEST_P(ToolContractTest, FailureModesGiveClearMessages) {
  {
    ScopedEnv m(var("_MODE"), "fail");
    EXPECT_EQ(read_error(config()),
              tool() + " exited 3: " + tool() + ": failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv m(var("_MODE"), "garbage");
    EXPECT_EQ(read_error(config()), GetParam().garbage_error);
  }
  {
    ScopedEnv m(var("_MODE"), "crash");
    const std::string e = read_error(config());
    EXPECT_EQ(e.rfind(tool() + " killed by signal 11 (SIGSEGV)", 0), 0u) << e;
  }
}

TEST_P(ToolContractTest, EmptyOutputIsAnError) {
  testing::write_file(files_.path() / "empty", "");
  ScopedEnv f(var("_FIXTURE"), (files_.path() / "empty").string());
  EXPECT_EQ(read_error(config()), GetParam().empty_error);
}

TEST_P(ToolContractTest, HungToolTimesOut) {
  ScopedEnv m(var("_MODE"), "hang");
  InventoryConfig c = config();
  c.timeout = 300ms;
  EXPECT_EQ(read_error(c), tool() + " timed out after 0.3 s");
}

TEST_P(ToolContractTest, MissingTool) {
  InventoryConfig c = config();
  c.*(GetParam().path) = "/nonexistent/" + tool();
  EXPECT_EQ(read_error(c), tool() + " not found at /nonexistent/" + tool());
  c.*(GetParam().path) = tool();
  c.path_env = "/nonexistent";
  EXPECT_EQ(read_error(c), tool() + " not found in PATH");
}

TEST_P(ToolContractTest, AutoFindsTheToolInPath) {
  InventoryConfig c = config();
  c.*(GetParam().path) = tool();
  c.path_env = "/nonexistent:" + std::filesystem::path(GetParam().fake).parent_path().string();
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, GetParam().vendor);
  auto source = make_inventory_source("auto", runner_, c);
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto inv = (*source)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, GetParam().vendor);
  EXPECT_EQ(inv->devices.size(), GetParam().devices);
  EXPECT_EQ(read_error(c), "(ok)");  // By name (--vendor NAME) too.
}

INSTANTIATE_TEST_SUITE_P(
    OneCallTools, ToolContractTest,
    ::testing::Values(ToolCase{"amd-smi", "FAKE_AMD_SMI", FAKE_AMD_SMI_PATH, &InventoryConfig::amd_smi,
                               "amd-smi/mi300x-8-static-gpu-data.json", "amd", api::Vendor::amd, 8, "amd-smi: not JSON",
                               "amd-smi: not JSON"},
                      ToolCase{"npu-smi", "FAKE_NPU_SMI", FAKE_NPU_SMI_PATH, &InventoryConfig::npu_smi,
                               "npu-smi/atlas800-9010-910a-8-info.txt", "ascend", api::Vendor::ascend, 8,
                               "npu-smi line 2: not printable ASCII", "npu-smi: no device table"},
                      ToolCase{"xpu-smi", "FAKE_XPU_SMI", FAKE_XPU_SMI_PATH, &InventoryConfig::xpu_smi,
                               "xpu-smi/max1550-4-discovery.json", "intel", api::Vendor::intel, 4, "xpu-smi: not JSON",
                               "xpu-smi: not JSON"},
                      ToolCase{"neuron-ls", "FAKE_NEURON_LS", FAKE_NEURON_LS_PATH, &InventoryConfig::neuron_ls,
                               "neuron-ls/trn2-48xlarge-16.json", "neuron", api::Vendor::neuron, 16,
                               "neuron-ls: not JSON", "neuron-ls: not JSON"},
                      ToolCase{"mthreads-gmi", "FAKE_MTHREADS_GMI", FAKE_MTHREADS_GMI_PATH,
                               &InventoryConfig::mthreads_gmi, "mthreads-gmi/s5000-8.json", "mthreads",
                               api::Vendor::mthreads, 8, "mthreads-gmi: not JSON", "mthreads-gmi: not JSON"},
                      // cnmon writes its answer into a file: junk on stdout means no file.
                      ToolCase{"cnmon", "FAKE_CNMON", FAKE_CNMON_PATH, &InventoryConfig::cnmon,
                               "cnmon/mlu370-x8-8.json", "cambricon", api::Vendor::cambricon, 8,
                               "cnmon wrote no cnmon_info.json", "cnmon: not JSON"}),
    [](const ::testing::TestParamInfo<ToolCase>& info) { return std::string(info.param.vendor_name); });

}  // namespace
}  // namespace tessel::agent
