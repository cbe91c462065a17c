// Each non-Gaudi vendor end to end, one row of a table each: the real scheduler and
// agent on the vendor's fake tool replaying a recorded machine (tests/fixtures), the
// node's inventory as the API shows it, what a job of each group size sees in its
// environment, and a job the node cannot run staying pending with the reason.
//   amd     amd-smi   8 × MI300X: ROCR_VISIBLE_DEVICES as ROCr UUIDs
//   ascend  npu-smi   Atlas 800 (8 × 910A): a group inside one HCCS ring,
//                     ASCEND_RT_VISIBLE_DEVICES
//   intel   xpu-smi   4 × Max 1550: ZE_AFFINITY_MASK, Level Zero in COMPOSITE mode
//   neuron  neuron-ls trn2.48xlarge (16 devices of 4 NeuronCores): an aligned block,
//                     one contiguous NEURON_RT_VISIBLE_CORES range
//   mthreads mthreads-gmi 8 × MTT S5000: MUSA_VISIBLE_DEVICES (mthreads-gmi indices),
//                     groups of up to 4 inside one NUMA half
//   cambricon cnmon  8 × MLU370-X8 (cnmon_info.json written in its cwd): aligned
//                     blocks, MLU_VISIBLE_DEVICES
//   amd     rocm-smi 2 × MI100, read when amd-smi is absent (--rocm-smi)
//   tpu     PCI scan 8 × TPU v6e under a sysfs tree the test writes (--sysfs-root):
//                     TPU_VISIBLE_CHIPS and the sub-slice's bounds
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;

namespace {

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

struct Vendor {
  std::string name;  // The test's name.
  std::string node;
  Cluster::VendorTool tool;
  std::function<void(const json& inventory)> check_inventory;
  std::string model;  // The jobs' "model", when they name one.
  std::vector<int> group_sizes;
  // What a job of `run.indices.size()` cards saw, beyond the checks every vendor shares.
  std::function<void(Cluster::EnvRun& run)> check_env;
  std::string device_type, dist_backend;
  json waiting_spec;
  std::string waiting_reason;
  // What the node needs before its agent starts, given the cluster's directory: more
  // agent flags (none when unset).
  std::function<std::vector<std::string>(const std::string& dir)> prepare = {};
};

void PrintTo(const Vendor& v, std::ostream* os) { *os << v.name; }

const char* const kAmdUuids[] = {"GPU-7ef570db1b346018", "GPU-6be2ee3b2b314cfc", "GPU-1b8ae5f41e1bd1cc",
                                 "GPU-2c9bf6052f2ce2dd", "GPU-3dac07164039f3ee", "GPU-4ebd18275140a4ff",
                                 "GPU-5fce29386251b500", "GPU-60df3a497362c611"};

json on_one_card_of(const std::string& vendor) {
  return {{"command", {"/bin/true"}}, {"devices", 1}, {"vendor", vendor}};
}

const Vendor kAmd{
    "Amd",
    "mi1",
    {"amd", "--amd-smi", FAKE_AMD_SMI_BIN, "FAKE_AMD_SMI_FIXTURE", "amd-smi/mi300x-8-static-gpu-data.json"},
    [](const json& inv) {
      ASSERT_EQ(inv["devices"].size(), 8u);
      EXPECT_EQ(inv["devices"][3]["uuid"], kAmdUuids[3]);
    },
    "AMD Instinct MI300X",
    {1, 2, 4, 8},
    [](Cluster::EnvRun& run) {
      std::string rocr, hip;
      for (size_t i = 0; i < run.indices.size(); ++i) {
        rocr += (i ? "," : "") + std::string(kAmdUuids[run.indices[i]]);
        hip += (i ? "," : "") + std::to_string(i);
      }
      EXPECT_EQ(run.env["ROCR_VISIBLE_DEVICES"], rocr);
      EXPECT_EQ(run.env["HIP_VISIBLE_DEVICES"], hip);
      EXPECT_EQ(run.env.count("HABANA_VISIBLE_MODULES"), 0u);
    },
    "cuda",
    "nccl",
    on_one_card_of("habana"),
    "habana"};

const Vendor kAscend{
    "Ascend",
    "npu1",
    {"ascend", "--npu-smi", FAKE_NPU_SMI_BIN, "FAKE_NPU_SMI_FIXTURE", "npu-smi/atlas800-9010-910a-8-info.txt"},
    [](const json& inv) {
      EXPECT_EQ(inv["driver_version"], "24.1.RC2");
      ASSERT_EQ(inv["devices"].size(), 8u);
      EXPECT_EQ(inv["devices"][3]["uuid"], "NPU-0000:01:00.0");
    },
    "xxx",
    {1, 2, 4, 8},
    [](Cluster::EnvRun& run) {
      const std::vector<int> idx = sorted(run.indices);
      if (idx.size() <= 4) EXPECT_EQ(idx.front() / 4, idx.back() / 4) << "spans both HCCS rings";
      EXPECT_EQ(run.env["ASCEND_RT_VISIBLE_DEVICES"], join(idx));
      EXPECT_EQ(run.env.count("HABANA_VISIBLE_MODULES"), 0u);
    },
    "npu",
    "hccl",
    on_one_card_of("amd"),
    "amd"};

const Vendor kIntel{
    "Intel",
    "xe1",
    {"intel", "--xpu-smi", FAKE_XPU_SMI_BIN, "FAKE_XPU_SMI_FIXTURE", "xpu-smi/max1550-4-discovery.json"},
    [](const json& inv) {
      ASSERT_EQ(inv["devices"].size(), 4u);
      EXPECT_EQ(inv["devices"][1]["uuid"], "00000000-0000-0042-0000-002f0bd58086");
      EXPECT_EQ(inv["groups"], json::parse(R"({"all": true})"));
    },
    "Intel(R) Data Center GPU Max 1550",
    {1, 2, 4},
    [](Cluster::EnvRun& run) {
      EXPECT_EQ(run.env["ZE_AFFINITY_MASK"], join(run.indices));
      EXPECT_EQ(run.env["ZE_FLAT_DEVICE_HIERARCHY"], "COMPOSITE");
      EXPECT_EQ(run.env.count("HABANA_VISIBLE_MODULES"), 0u);
    },
    "xpu",
    "xccl",
    on_one_card_of("neuron"),
    "neuron"};

const Vendor kNeuron{
    "Neuron",
    "trn1",
    {"neuron", "--neuron-ls", FAKE_NEURON_LS_BIN, "FAKE_NEURON_LS_FIXTURE", "neuron-ls/trn2-48xlarge-16.json"},
    [](const json& inv) {
      ASSERT_EQ(inv["devices"].size(), 16u);
      EXPECT_EQ(inv["devices"][15]["uuid"], "NEURON-f7:00.0");
      EXPECT_EQ(inv["devices"][15]["cores"], 4);
      EXPECT_EQ(inv["groups"]["16"].size(), 1u);
    },
    "",
    {1, 4, 8, 16},
    [](Cluster::EnvRun& run) {
      const std::vector<int> idx = sorted(run.indices);
      const int devices = static_cast<int>(idx.size());
      EXPECT_EQ(idx.front() % devices, 0) << "not an aligned block";
      EXPECT_EQ(idx.back() - idx.front() + 1, devices) << "not contiguous";
      const int first = idx.front() * 4, last = idx.back() * 4 + 3;
      EXPECT_EQ(run.env["NEURON_RT_VISIBLE_CORES"], std::to_string(first) + "-" + std::to_string(last));
    },
    "neuron",
    "xla",
    // Two devices is no Trainium group.
    {{"command", {"/bin/true"}}, {"devices", 2}, {"vendor", "neuron"}},
    "no node has 2 healthy neuron cards"};

const Vendor kMthreads{
    "Mthreads",
    "mt1",
    {"mthreads", "--mthreads-gmi", FAKE_MTHREADS_GMI_BIN, "FAKE_MTHREADS_GMI_FIXTURE", "mthreads-gmi/s5000-8.json"},
    [](const json& inv) {
      EXPECT_EQ(inv["driver_version"], "3.3.5-server");
      ASSERT_EQ(inv["devices"].size(), 8u);
      EXPECT_EQ(inv["devices"][1]["uuid"], "00000001-5000-4000-8000-00000000003a");
      EXPECT_EQ(inv["devices"][1]["model"], "MTT S5000");
      EXPECT_EQ(inv["groups"], json::parse(R"({"all": true})"));
    },
    "MTT S5000",
    {1, 2, 4, 8},
    [](Cluster::EnvRun& run) {
      if (run.indices.size() <= 4) EXPECT_EQ(run.indices.front() / 4, run.indices.back() / 4) << "spans NUMA halves";
      EXPECT_EQ(run.env["MUSA_VISIBLE_DEVICES"], join(run.indices));
      EXPECT_EQ(run.env.count("HABANA_VISIBLE_MODULES"), 0u);
    },
    "musa",
    "mccl",
    on_one_card_of("intel"),
    "intel"};

const Vendor kCambricon{"Cambricon",
                        "mlu1",
                        {"cambricon", "--cnmon", FAKE_CNMON_BIN, "FAKE_CNMON_FIXTURE", "cnmon/mlu370-x8-8.json"},
                        [](const json& inv) {
                          ASSERT_EQ(inv["devices"].size(), 8u);
                          EXPECT_EQ(inv["devices"][1]["uuid"], "MLU-010a1b2c-3d4e-5f60-7182-93a4b5c6d71b");
                          EXPECT_EQ(inv["devices"][1]["model"], "MLU370-X8");
                        },
                        "MLU370-X8",
                        {1, 2, 4, 8},
                        [](Cluster::EnvRun& run) {
                          const std::vector<int> idx = sorted(run.indices);
                          const int devices = static_cast<int>(idx.size());
                          EXPECT_EQ(idx.front() % devices, 0) << "not an aligned block";
                          EXPECT_EQ(idx.back() - idx.front() + 1, devices) << "not contiguous";
                          EXPECT_EQ(run.env["MLU_VISIBLE_DEVICES"], join(idx));
                          EXPECT_EQ(run.env.count("HABANA_VISIBLE_MODULES"), 0u);
                        },
                        "mlu",
                        "cncl",
                        on_one_card_of("mthreads"),
                        "mthreads"};

// AMD's legacy tool: the agent reads rocm-smi when amd-smi is not there.
const char* const kMi100Uuids[] = {"GPU-7ef570db1b346018", "GPU-6be2ee3b2b314cfc"};
const Vendor kAmdRocmSmi{"AmdRocmSmi",
                         "mi100",
                         {"amd",
                          "--rocm-smi",
                          FAKE_ROCM_SMI_BIN,
                          "FAKE_ROCM_SMI_FIXTURE",
                          "rocm-smi/determined-2.json",
                          {"--amd-smi", "/nonexistent/amd-smi"}},
                         [](const json& inv) {
                           ASSERT_EQ(inv["devices"].size(), 2u);
                           EXPECT_EQ(inv["devices"][1]["uuid"], kMi100Uuids[1]);
                           EXPECT_EQ(inv["devices"][1]["bus_id"], "0000:43:00.0");
                         },
                         "",
                         {1, 2},
                         [](Cluster::EnvRun& run) {
                           std::string rocr;
                           for (size_t i = 0; i < run.indices.size(); ++i)
                             rocr += (i ? "," : "") + std::string(kMi100Uuids[run.indices[i]]);
                           EXPECT_EQ(run.env["ROCR_VISIBLE_DEVICES"], rocr);
                         },
                         "cuda",
                         "nccl",
                         on_one_card_of("tpu"),
                         "tpu"};

// A TPU v6e-8 host as sysfs shows it: eight functions of vendor 0x1ae0, device 0x006f,
// and Google's network card (0x0042), which is not a chip.
std::vector<std::string> write_tpu_sysfs(const std::string& dir) {
  const std::filesystem::path root = std::filesystem::path(dir) / "sysfs";
  auto function = [&](const std::string& address, const char* device) {
    const auto f = root / "bus/pci/devices" / address;
    std::filesystem::create_directories(f);
    std::ofstream(f / "vendor") << "0x1ae0\n";
    std::ofstream(f / "device") << device << "\n";
  };
  for (int i = 0; i < 8; ++i) {
    char address[16];
    std::snprintf(address, sizeof address, "0000:00:%02x.0", 4 + i);
    function(address, "0x006f");
  }
  function("0000:00:0c.0", "0x0042");
  return {"--sysfs-root", root.string()};
}

const Vendor kTpu{
    "Tpu",
    "tpu1",
    {"tpu", "", "", "", ""},
    [](const json& inv) {
      ASSERT_EQ(inv["devices"].size(), 8u);
      EXPECT_EQ(inv["devices"][0]["model"], "TPU v6e");
      EXPECT_EQ(inv["devices"][7]["uuid"], "TPU-0000:00:0b.0");
    },
    "TPU v6e",
    {1, 2, 4, 8},
    [](Cluster::EnvRun& run) {
      const std::vector<int> idx = sorted(run.indices);
      const int devices = static_cast<int>(idx.size());
      EXPECT_EQ(idx.front() % devices, 0) << "not an aligned block";
      EXPECT_EQ(run.env["TPU_VISIBLE_CHIPS"], join(idx));
      const char* bounds = devices == 1 ? "1,1,1" : devices == 2 ? "1,2,1" : devices == 4 ? "2,2,1" : "2,4,1";
      EXPECT_EQ(run.env["TPU_CHIPS_PER_PROCESS_BOUNDS"], bounds);
      EXPECT_EQ(run.env["TPU_PROCESS_BOUNDS"], "1,1,1");
    },
    "tpu",
    "xla",
    on_one_card_of("cambricon"),
    "cambricon",
    write_tpu_sysfs};

class ClusterVendor : public ::testing::TestWithParam<Vendor> {
 protected:
  void SetUp() override {
    Cluster::VendorTool tool = GetParam().tool;
    if (GetParam().prepare) {
      const std::vector<std::string> more = GetParam().prepare(c.root());
      tool.args.insert(tool.args.end(), more.begin(), more.end());
    }
    c.start_with_vendor(GetParam().node, tool);
  }
  Cluster c;
};

TEST_P(ClusterVendor, NodeReportsItsInventory) {
  const Vendor& v = GetParam();
  json node = c.get("/v1/nodes/" + v.node);
  EXPECT_EQ(node["inventory"]["vendor"], v.tool.vendor) << node.dump();
  v.check_inventory(node["inventory"]);
}

TEST_P(ClusterVendor, AJobSeesItsCards) {
  const Vendor& v = GetParam();
  for (int devices : v.group_sizes) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    json spec = {{"command", {"/usr/bin/env"}}, {"devices", devices}, {"vendor", v.tool.vendor}};
    if (!v.model.empty()) spec["model"] = v.model;
    auto run = c.run_and_read_env(v.node, spec);
    ASSERT_TRUE(run);
    ASSERT_EQ(static_cast<int>(run->indices.size()), devices);
    v.check_env(*run);
    EXPECT_EQ(run->env["TESSEL_DEVICE_TYPE"], v.device_type);
    EXPECT_EQ(run->env["TESSEL_DIST_BACKEND"], v.dist_backend);
    EXPECT_EQ(run->env.count("CUDA_VISIBLE_DEVICES"), 0u);
  }
}

TEST_P(ClusterVendor, AJobTheNodeCannotRunWaitsWithTheReason) {
  c.expect_waits(GetParam().waiting_spec, GetParam().waiting_reason);
}

INSTANTIATE_TEST_SUITE_P(Vendors, ClusterVendor,
                         ::testing::Values(kAmd, kAscend, kIntel, kNeuron, kMthreads, kCambricon, kAmdRocmSmi, kTpu),
                         [](const ::testing::TestParamInfo<Vendor>& info) { return info.param.name; });

}  // namespace
