// `tessel-agent inventory` called as a function, with argv arrays.
#include "tessel/agent/inventory_cli.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_util.hpp"

namespace tessel::agent {
namespace {

using nlohmann::json;
using testing::ScopedEnv;

struct Outcome {
  int rc;
  std::string out;
  std::string err;
};

Outcome run(std::vector<std::string> args) {
  args.insert(args.begin(), "inventory");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  int rc = inventory_main(static_cast<int>(args.size()), argv.data(), out, err);
  return {rc, out.str(), err.str()};
}

class InventoryCliTest : public ::testing::Test {
 protected:
  testing::TempDir sysfs_;
  ScopedEnv hl_fixture_{"FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-4card.csv")};
  ScopedEnv nv_fixture_{"FAKE_NVIDIA_SMI_FIXTURE", testing::fixture_path("nvidia-smi/h100-8.csv")};
};

TEST_F(InventoryCliTest, PrintsPrettyJson) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  testing::write_sysfs_status(sysfs_.path(), 0, "operational\n");
  auto o = run({"--vendor", "habana", "--hl-smi", FAKE_HL_SMI_PATH, "--sysfs-root", sysfs_.path().string()});
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.err, "");
  json j = json::parse(o.out);
  EXPECT_EQ(o.out, j.dump(2) + "\n");
  EXPECT_EQ(j["vendor"], "habana");
  EXPECT_EQ(j["devices"].size(), 4u);
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3]]"));
  EXPECT_FALSE(j["groups"].contains("8"));
}

TEST_F(InventoryCliTest, AutoPicksNvidiaWhenNoHlSmi) {
  ScopedEnv mode("FAKE_NVIDIA_SMI_MODE", "normal");
  auto o = run({"--hl-smi", "/nonexistent/hl-smi", "--nvidia-smi", FAKE_NVIDIA_SMI_PATH});
  ASSERT_EQ(o.rc, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_EQ(j["vendor"], "nvidia");
  EXPECT_EQ(j["groups"], json::parse(R"({"all": true})"));
}

// A vendor picked by --vendor and its tool by its flag: the fake tool, its fixture
// and mode variables, and what the inventory must show beyond the vendor and count.
struct VendorCase {
  std::string name, vendor, flag, fake, fixture_var, fixture, mode_var;
  size_t devices;
  std::function<void(const json&)> check;
};

void PrintTo(const VendorCase& v, std::ostream* os) { *os << v.name; }

class InventoryCliVendorTest : public InventoryCliTest, public ::testing::WithParamInterface<VendorCase> {};

TEST_P(InventoryCliVendorTest, VendorAndToolFlag) {
  const VendorCase& v = GetParam();
  ScopedEnv fixture(v.fixture_var, testing::fixture_path(v.fixture));
  ScopedEnv mode(v.mode_var, "normal");
  auto o = run({"--vendor", v.vendor, v.flag, v.fake});
  ASSERT_EQ(o.rc, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_EQ(j["vendor"], v.vendor);
  ASSERT_EQ(j["devices"].size(), v.devices);
  v.check(j);
}

const json kAll = json::parse(R"({"all": true})");

INSTANTIATE_TEST_SUITE_P(
    Vendors, InventoryCliVendorTest,
    ::testing::Values(VendorCase{"Amd", "amd", "--amd-smi", FAKE_AMD_SMI_PATH, "FAKE_AMD_SMI_FIXTURE",
                                 "amd-smi/mi300x-8-static-gpu-data.json", "FAKE_AMD_SMI_MODE", 8,
                                 [](const json& j) {
                                   EXPECT_EQ(j["devices"][0]["uuid"], "GPU-7ef570db1b346018");
                                   EXPECT_EQ(j["groups"], kAll);
                                 }},
                      VendorCase{"Ascend", "ascend", "--npu-smi", FAKE_NPU_SMI_PATH, "FAKE_NPU_SMI_FIXTURE",
                                 "npu-smi/atlas800-9010-910a-8-info.txt", "FAKE_NPU_SMI_MODE", 8,
                                 [](const json& j) {
                                   EXPECT_EQ(j["driver_version"], "24.1.RC2");
                                   EXPECT_EQ(j["devices"][0]["uuid"], "NPU-0000:c1:00.0");
                                   // The HCCS rings {0-3} {4-7}: pairs and quads inside a ring, or all eight.
                                   EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3],[4,5],[6,7]]"));
                                   EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3],[4,5,6,7]]"));
                                   EXPECT_EQ(j["groups"]["8"], json::parse("[[0,1,2,3,4,5,6,7]]"));
                                 }},
                      VendorCase{"Intel", "intel", "--xpu-smi", FAKE_XPU_SMI_PATH, "FAKE_XPU_SMI_FIXTURE",
                                 "xpu-smi/max1100-2-discovery.json", "FAKE_XPU_SMI_MODE", 2,
                                 [](const json& j) {
                                   EXPECT_EQ(j["devices"][0]["uuid"], "00000000-0000-0029-0000-002f0bda8086");
                                   EXPECT_EQ(j["groups"], kAll);
                                 }},
                      VendorCase{
                          "Neuron", "neuron", "--neuron-ls", FAKE_NEURON_LS_PATH, "FAKE_NEURON_LS_FIXTURE",
                          "neuron-ls/trn2-48xlarge-16.json", "FAKE_NEURON_LS_MODE", 16,
                          [](const json& j) {
                            EXPECT_EQ(j["devices"][3]["cores"], 4);
                            // Trn2: aligned blocks of 4, 8 and 16 devices.
                            EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]"));
                            EXPECT_EQ(j["groups"]["8"], json::parse("[[0,1,2,3,4,5,6,7],[8,9,10,11,12,13,14,15]]"));
                            EXPECT_EQ(j["groups"]["16"].size(), 1u);
                            EXPECT_FALSE(j["groups"].contains("2"));
                          }}),
    [](const ::testing::TestParamInfo<VendorCase>& info) { return info.param.name; });

TEST_F(InventoryCliTest, MooreThreadsVendorAndToolFlag) {
  ScopedEnv fixture("FAKE_MTHREADS_GMI_FIXTURE", testing::fixture_path("mthreads-gmi/s5000-8.json"));
  ScopedEnv mode("FAKE_MTHREADS_GMI_MODE", "normal");
  auto o = run({"--vendor", "mthreads", "--mthreads-gmi", FAKE_MTHREADS_GMI_PATH});
  ASSERT_EQ(o.rc, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_EQ(j["vendor"], "mthreads");
  ASSERT_EQ(j["devices"].size(), 8u);
  EXPECT_EQ(j["devices"][0]["uuid"], "00000000-5000-4000-8000-00000000002a");
  EXPECT_EQ(j["devices"][0]["memory_total_mib"], 81920);
  EXPECT_EQ(j["groups"], json::parse(R"({"all": true})"));
}

TEST_F(InventoryCliTest, CambriconVendorAndToolFlag) {
  ScopedEnv fixture("FAKE_CNMON_FIXTURE", testing::fixture_path("cnmon/mlu370-x8-8.json"));
  ScopedEnv mode("FAKE_CNMON_MODE", "normal");
  auto o = run({"--vendor", "cambricon", "--cnmon", FAKE_CNMON_PATH});
  ASSERT_EQ(o.rc, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_EQ(j["vendor"], "cambricon");
  ASSERT_EQ(j["devices"].size(), 8u);
  // MLU-Link rings: the aligned blocks of 2, 4 and 8 cards.
  EXPECT_EQ(j["groups"]["2"], json::parse("[[0,1],[2,3],[4,5],[6,7]]"));
  EXPECT_EQ(j["groups"]["4"], json::parse("[[0,1,2,3],[4,5,6,7]]"));
  EXPECT_EQ(j["groups"]["8"].size(), 1u);
}

TEST_F(InventoryCliTest, ToolFailureIsOneLineAndExitOne) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "fail");
  auto o = run({"--vendor", "habana", "--hl-smi", FAKE_HL_SMI_PATH});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tessel-agent inventory: reading inventory: hl-smi exited 3: hl-smi: failed to open device (fake "
            "failure) | second line of detail\n");
}

TEST_F(InventoryCliTest, TimeoutFlag) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "hang");
  auto o = run({"--vendor", "habana", "--hl-smi", FAKE_HL_SMI_PATH, "--timeout", "0.3"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err, "tessel-agent inventory: reading inventory: hl-smi timed out after 0.3 s\n");
}

TEST_F(InventoryCliTest, NothingFound) {
  auto o = run({"--hl-smi", "/nonexistent/a", "--nvidia-smi", "/nonexistent/b", "--amd-smi", "/nonexistent/c",
                "--npu-smi", "/nonexistent/d", "--xpu-smi", "/nonexistent/e", "--neuron-ls", "/nonexistent/f",
                "--mthreads-gmi", "/nonexistent/g", "--cnmon", "/nonexistent/h", "--sysfs-root", "/nonexistent"});
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.err,
            "tessel-agent inventory: reading inventory: no hl-smi, nvidia-smi, amd-smi, npu-smi, xpu-smi, neuron-ls, "
            "mthreads-gmi, cnmon or TPU chip found\n");
}

TEST_F(InventoryCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run({"--vendor", "rocm"}).rc, 2);
  EXPECT_EQ(run({"--timeout", "0"}).rc, 2);
  EXPECT_EQ(run({"--timeout", "abc"}).rc, 2);
  EXPECT_EQ(run({"--bogus"}).rc, 2);
  auto o = run({"extra-positional"});
  EXPECT_EQ(o.rc, 2);
  EXPECT_EQ(o.err.rfind("tessel-agent inventory: ", 0), 0u);
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1);
  auto help = run({"--help"});
  EXPECT_EQ(help.rc, 0);
  EXPECT_NE(help.out.find("--sysfs-root"), std::string::npos);
}

}  // namespace
}  // namespace tessel::agent
