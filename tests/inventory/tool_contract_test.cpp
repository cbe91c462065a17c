// What every one-call vendor tool's inventory promises, run against each fake tool:
// a tool that fails, crashes, hangs, prints junk or nothing, or is not installed
// gives a one-line error naming the tool; `--vendor auto` finds it in PATH. Each
// vendor's own file tests what is particular to it (its fixtures, telemetry, cleanup).
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>

#include "fake_tool_test.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

struct ToolCase {
  testing::FakeTool tool;
  const char* name;     // How messages name the tool ("amd-smi").
  const char* fixture;  // A fixture the fake replays.
  api::Vendor vendor;
  size_t devices;             // In the fixture.
  const char* garbage_error;  // When the tool prints junk.
  const char* empty_error;    // When it prints (or writes) nothing.
};

void PrintTo(const ToolCase& c, std::ostream* os) { *os << c.name; }

class ToolContractTest : public testing::FakeToolTest, public ::testing::WithParamInterface<ToolCase> {
 protected:
  ToolContractTest() : FakeToolTest(GetParam().tool, GetParam().fixture) {}
  std::string name() const { return GetParam().name; }

  testing::TempDir files_;
};

TEST_P(ToolContractTest, FailureModesGiveClearMessages) {
  {
    ScopedEnv m(var("_MODE"), "fail");
    EXPECT_EQ(read_error(config()),
              name() + " exited 3: " + name() + ": failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv m(var("_MODE"), "garbage");
    EXPECT_EQ(read_error(config()), GetParam().garbage_error);
  }
  {
    ScopedEnv m(var("_MODE"), "crash");
    const std::string e = read_error(config());
    EXPECT_EQ(e.rfind(name() + " killed by signal 11 (SIGSEGV)", 0), 0u) << e;
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
  EXPECT_EQ(read_error(c), name() + " timed out after 0.3 s");
}

TEST_P(ToolContractTest, MissingTool) {
  InventoryConfig c = config();
  c.*(tool().path) = "/nonexistent/" + name();
  EXPECT_EQ(read_error(c), name() + " not found at /nonexistent/" + name());
  c.*(tool().path) = name();
  c.path_env = "/nonexistent";
  EXPECT_EQ(read_error(c), name() + " not found in PATH");
}

TEST_P(ToolContractTest, AutoFindsTheToolInPath) {
  InventoryConfig c = config();
  c.*(tool().path) = name();
  c.path_env = "/nonexistent:" + std::filesystem::path(tool().fake).parent_path().string();
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
    ::testing::Values(ToolCase{testing::kAmdSmi, "amd-smi", "amd-smi/mi300x-8-static-gpu-data.json", api::Vendor::amd,
                               8, "amd-smi: not JSON", "amd-smi: not JSON"},
                      ToolCase{testing::kNpuSmi, "npu-smi", "npu-smi/atlas800-9010-910a-8-info.txt",
                               api::Vendor::ascend, 8, "npu-smi line 2: not printable ASCII",
                               "npu-smi: no device table"},
                      ToolCase{testing::kXpuSmi, "xpu-smi", "xpu-smi/max1550-4-discovery.json", api::Vendor::intel, 4,
                               "xpu-smi: not JSON", "xpu-smi: not JSON"},
                      ToolCase{testing::kNeuronLs, "neuron-ls", "neuron-ls/trn2-48xlarge-16.json", api::Vendor::neuron,
                               16, "neuron-ls: not JSON", "neuron-ls: not JSON"},
                      ToolCase{testing::kMthreadsGmi, "mthreads-gmi", "mthreads-gmi/s5000-8.json",
                               api::Vendor::mthreads, 8, "mthreads-gmi: not JSON", "mthreads-gmi: not JSON"},
                      // cnmon writes its answer into a file: junk on stdout means no file.
                      ToolCase{testing::kCnmon, "cnmon", "cnmon/mlu370-x8-8.json", api::Vendor::cambricon, 8,
                               "cnmon wrote no cnmon_info.json", "cnmon: not JSON"}),
    [](const ::testing::TestParamInfo<ToolCase>& info) { return std::string(info.param.tool.vendor_name); });

}  // namespace
}  // namespace tessel::agent
