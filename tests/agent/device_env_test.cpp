// The device variables contract per vendor (device_env.hpp): visibility variables in
// the runtime's id space and order, TESSEL_DEVICE_TYPE and TESSEL_DIST_BACKEND.
#include "tessel/agent/device_env.hpp"

#include <gtest/gtest.h>

#include "tessel/agent/task_env.hpp"
#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using agent_test::gaudi_assignment;

namespace {

api::NodeInventory inventory(api::Vendor vendor, const std::vector<std::string>& uuids) {
  api::NodeInventory inv;
  inv.vendor = vendor;
  for (size_t i = 0; i < uuids.size(); ++i) {
    api::Device d;
    d.index = d.module_id = static_cast<int>(i);
    d.uuid = uuids[i];
    inv.devices.push_back(d);
  }
  return inv;
}

Env device_env(api::Vendor v, const api::Assignment& a, const api::NodeInventory& inv) {
  Env env;
  auto st = add_device_env(env, v, a, inv);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return env;
}

TEST(DeviceEnv, DeviceTypeAndBackendPerVendor) {
  const std::vector<std::tuple<api::Vendor, std::string, std::string>> table = {
      {api::Vendor::habana, "hpu", "hccl"},   {api::Vendor::nvidia, "cuda", "nccl"},
      {api::Vendor::amd, "cuda", "nccl"},     {api::Vendor::intel, "xpu", "xccl"},
      {api::Vendor::ascend, "npu", "hccl"},   {api::Vendor::neuron, "neuron", "xla"},
      {api::Vendor::tpu, "tpu", "xla"},       {api::Vendor::cambricon, "mlu", "cncl"},
      {api::Vendor::mthreads, "musa", "mccl"}};
  for (const auto& [v, type, backend] : table) {
    EXPECT_EQ(device_runtime(v).device_type, type) << api::to_string(v);
    EXPECT_EQ(device_runtime(v).dist_backend, backend) << api::to_string(v);
  }
}

TEST(DeviceEnv, HabanaModulesIndicesHpuHccl) {
  Env env = device_env(api::Vendor::habana, gaudi_assignment({2, 3}, {2, 1}), inventory(api::Vendor::habana, {}));
  EXPECT_EQ(env, (Env{{"HABANA_VISIBLE_MODULES", "2,3"},
                      {"HABANA_VISIBLE_DEVICES", "2,1"},
                      {"TESSEL_DEVICE_TYPE", "hpu"},
                      {"TESSEL_DIST_BACKEND", "hccl"}}));
}

TEST(DeviceEnv, NvidiaUuidsCudaNccl) {
  auto inv = inventory(api::Vendor::nvidia, {"GPU-a", "GPU-b", "GPU-c"});
  Env env = device_env(api::Vendor::nvidia, gaudi_assignment({0, 2}, {0, 2}), inv);
  EXPECT_EQ(
      env,
      (Env{{"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-c"}, {"TESSEL_DEVICE_TYPE", "cuda"}, {"TESSEL_DIST_BACKEND", "nccl"}}));
}

TEST(DeviceEnv, AmdRocrUuidsThenHipRelativeIndices) {
  auto inv = inventory(api::Vendor::amd, {"GPU-7ef570db1b346018", "GPU-6be2ee3b2b314cfc", "GPU-1b8ae5f41e1bd1cc"});
  Env env = device_env(api::Vendor::amd, gaudi_assignment({1, 2}, {1, 2}), inv);
  EXPECT_EQ(env, (Env{{"ROCR_VISIBLE_DEVICES", "GPU-6be2ee3b2b314cfc,GPU-1b8ae5f41e1bd1cc"},
                      {"HIP_VISIBLE_DEVICES", "0,1"},
                      {"TESSEL_DEVICE_TYPE", "cuda"},
                      {"TESSEL_DIST_BACKEND", "nccl"}}));
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST(DeviceEnv, AmdCardWithoutSerialIsNamedByIndex) {
  auto inv = inventory(api::Vendor::amd, {"GPU-7ef570db1b346018", "", "GPU-1b8ae5f41e1bd1cc"});
  Env env = device_env(api::Vendor::amd, gaudi_assignment({0, 1, 2}, {0, 1, 2}), inv);
  EXPECT_EQ(env.at("ROCR_VISIBLE_DEVICES"), "GPU-7ef570db1b346018,1,GPU-1b8ae5f41e1bd1cc");
  EXPECT_EQ(env.at("HIP_VISIBLE_DEVICES"), "0,1,2");
}

TEST(DeviceEnv, AmdWithoutCardsHidesAll) {
  Env env = device_env(api::Vendor::amd, gaudi_assignment({}, {}), inventory(api::Vendor::amd, {"GPU-1"}));
  EXPECT_EQ(env.at("ROCR_VISIBLE_DEVICES"), "");
  EXPECT_EQ(env.at("HIP_VISIBLE_DEVICES"), "");
}

TEST(DeviceEnv, AmdCardMissingFromInventoryFails) {
  Env env;
  auto st = add_device_env(env, api::Vendor::amd, gaudi_assignment({5}, {5}), inventory(api::Vendor::amd, {"GPU-1"}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "GPU index 5 is not in the node inventory");
}

TEST(DeviceEnv, AscendLogicalIdsAscendingNpuHccl) {
  auto inv = inventory(api::Vendor::ascend, {"NPU-0000:c1:00.0", "NPU-0000:81:00.0", "NPU-0000:41:00.0",
                                             "NPU-0000:01:00.0", "NPU-0000:c2:00.0", "NPU-0000:82:00.0"});
  // CANN reads the list only as far as it ascends: the ids go out sorted whatever the
  // assignment's order.
  Env env = device_env(api::Vendor::ascend, gaudi_assignment({4, 5}, {5, 4}), inv);
  EXPECT_EQ(
      env, (Env{{"ASCEND_RT_VISIBLE_DEVICES", "4,5"}, {"TESSEL_DEVICE_TYPE", "npu"}, {"TESSEL_DIST_BACKEND", "hccl"}}));
  EXPECT_EQ(device_env(api::Vendor::ascend, gaudi_assignment({}, {}), inv).at("ASCEND_RT_VISIBLE_DEVICES"), "");
}

TEST(DeviceEnv, IntelCardsByLevelZeroIndexCompositeXpuXccl) {
  auto inv = inventory(api::Vendor::intel, {"u0", "u1", "u2", "u3"});
  Env env = device_env(api::Vendor::intel, gaudi_assignment({1, 3}, {1, 3}), inv);
  EXPECT_EQ(env, (Env{{"ZE_FLAT_DEVICE_HIERARCHY", "COMPOSITE"},
                      {"ZE_AFFINITY_MASK", "1,3"},
                      {"TESSEL_DEVICE_TYPE", "xpu"},
                      {"TESSEL_DIST_BACKEND", "xccl"}}));
  // No cards: an empty mask, every card hidden.
  EXPECT_EQ(device_env(api::Vendor::intel, gaudi_assignment({}, {}), inv).at("ZE_AFFINITY_MASK"), "");
}

api::NodeInventory neuron_inventory(int devices, int cores) {
  api::NodeInventory inv = inventory(api::Vendor::neuron, std::vector<std::string>(devices, ""));
  for (auto& d : inv.devices) d.cores = cores;
  return inv;
}

TEST(DeviceEnv, NeuronCoresAsContiguousRangesNeuronXla) {
  // Trn2 (4 logical cores per device): device d holds cores 4d .. 4d+3.
  auto inv = neuron_inventory(16, 4);
  EXPECT_EQ(
      device_env(api::Vendor::neuron, gaudi_assignment({4, 5, 6, 7}, {4, 5, 6, 7}), inv),
      (Env{{"NEURON_RT_VISIBLE_CORES", "16-31"}, {"TESSEL_DEVICE_TYPE", "neuron"}, {"TESSEL_DIST_BACKEND", "xla"}}));
  EXPECT_EQ(device_env(api::Vendor::neuron, gaudi_assignment({15}, {15}), inv).at("NEURON_RT_VISIBLE_CORES"), "60-63");
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[i] = i;
  EXPECT_EQ(device_env(api::Vendor::neuron, gaudi_assignment(all, all), inv).at("NEURON_RT_VISIBLE_CORES"), "0-63");
  // Trn1 (2 cores per device), and a device of one core.
  EXPECT_EQ(
      device_env(api::Vendor::neuron, gaudi_assignment({8, 9, 10, 11, 12, 13, 14, 15}, {8, 9, 10, 11, 12, 13, 14, 15}),
                 neuron_inventory(16, 2))
          .at("NEURON_RT_VISIBLE_CORES"),
      "16-31");
  EXPECT_EQ(
      device_env(api::Vendor::neuron, gaudi_assignment({3}, {3}), neuron_inventory(4, 1)).at("NEURON_RT_VISIBLE_CORES"),
      "3");
  // Inf2 (2 cores per device), a run of 3 of an inf2.48xlarge's 12 that is no aligned block.
  EXPECT_EQ(device_env(api::Vendor::neuron, gaudi_assignment({5, 6, 7}, {5, 6, 7}), neuron_inventory(12, 2))
                .at("NEURON_RT_VISIBLE_CORES"),
            "10-15");
  // Never a non-contiguous list the runtime refuses silently: separate ranges stay separate.
  EXPECT_EQ(device_env(api::Vendor::neuron, gaudi_assignment({0, 2}, {2, 0}), inv).at("NEURON_RT_VISIBLE_CORES"),
            "0-3,8-11");
  EXPECT_EQ(device_env(api::Vendor::neuron, gaudi_assignment({}, {}), inv).at("NEURON_RT_VISIBLE_CORES"), "");
}

TEST(DeviceEnv, NeuronDeviceWithoutCoresFails) {
  Env env;
  auto st = add_device_env(env, api::Vendor::neuron, gaudi_assignment({0}, {0}), neuron_inventory(1, 0));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "Neuron device 0 has no NeuronCore count");
  st = add_device_env(env, api::Vendor::neuron, gaudi_assignment({4}, {4}), neuron_inventory(4, 2));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "GPU index 4 is not in the node inventory");
}

TEST(DeviceEnv, MooreThreadsIndicesInAssignmentOrderMusaMccl) {
  auto inv = inventory(api::Vendor::mthreads, std::vector<std::string>(8, ""));
  EXPECT_EQ(
      device_env(api::Vendor::mthreads, gaudi_assignment({4, 5, 6, 7}, {4, 5, 6, 7}), inv),
      (Env{{"MUSA_VISIBLE_DEVICES", "4,5,6,7"}, {"TESSEL_DEVICE_TYPE", "musa"}, {"TESSEL_DIST_BACKEND", "mccl"}}));
  EXPECT_EQ(device_env(api::Vendor::mthreads, gaudi_assignment({2, 0}, {2, 0}), inv).at("MUSA_VISIBLE_DEVICES"), "2,0");
  EXPECT_EQ(device_env(api::Vendor::mthreads, gaudi_assignment({}, {}), inv).at("MUSA_VISIBLE_DEVICES"), "");
}

TEST(DeviceEnv, CambriconCardNumbersInAssignmentOrderMluCncl) {
  auto inv = inventory(api::Vendor::cambricon, std::vector<std::string>(8, ""));
  EXPECT_EQ(device_env(api::Vendor::cambricon, gaudi_assignment({4, 5}, {4, 5}), inv),
            (Env{{"MLU_VISIBLE_DEVICES", "4,5"}, {"TESSEL_DEVICE_TYPE", "mlu"}, {"TESSEL_DIST_BACKEND", "cncl"}}));
  EXPECT_EQ(device_env(api::Vendor::cambricon, gaudi_assignment({}, {}), inv).at("MLU_VISIBLE_DEVICES"), "");
}

TEST(DeviceEnv, TpuChipsAndTheirSubSliceTpuXla) {
  auto inv = inventory(api::Vendor::tpu, std::vector<std::string>(8, ""));
  EXPECT_EQ(device_env(api::Vendor::tpu, gaudi_assignment({6, 4, 7, 5}, {6, 4, 7, 5}), inv),
            (Env{{"TPU_VISIBLE_CHIPS", "4,5,6,7"},
                 {"TPU_CHIPS_PER_PROCESS_BOUNDS", "2,2,1"},
                 {"TPU_PROCESS_BOUNDS", "1,1,1"},
                 {"TESSEL_DEVICE_TYPE", "tpu"},
                 {"TESSEL_DIST_BACKEND", "xla"}}));
  EXPECT_EQ(device_env(api::Vendor::tpu, gaudi_assignment({3}, {3}), inv).at("TPU_CHIPS_PER_PROCESS_BOUNDS"), "1,1,1");
  EXPECT_EQ(device_env(api::Vendor::tpu, gaudi_assignment({2, 3}, {2, 3}), inv).at("TPU_CHIPS_PER_PROCESS_BOUNDS"),
            "1,2,1");
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(device_env(api::Vendor::tpu, gaudi_assignment(all, all), inv).at("TPU_CHIPS_PER_PROCESS_BOUNDS"), "2,4,1");
  Env env;
  auto st = add_device_env(env, api::Vendor::tpu, gaudi_assignment({0, 1, 2}, {0, 1, 2}), inv);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "no TPU sub-slice of 3 chips");
}

TEST(DeviceEnv, VendorWithoutBackendFails) {
  Env env;
  const auto unknown = static_cast<api::Vendor>(99);  // Every vendor has a backend now.
  auto st = add_device_env(env, unknown, gaudi_assignment({0}, {0}), inventory(unknown, {}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "no device variables for vendor unknown");
}

TEST(DeviceEnv, TaskEnvironmentCarriesThemAndTheJobCannotOverride) {
  auto a = gaudi_assignment({0}, {0});
  a.spec.env = {{"TESSEL_DIST_BACKEND", "gloo"}, {"ROCR_VISIBLE_DEVICES", "3"}};
  auto inv = inventory(api::Vendor::amd, {"GPU-7ef570db1b346018"});
  Env b = {{"PATH", "/bin"}};
  auto env = task_environment({a, inv, b, "n", 0, 1});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->at("ROCR_VISIBLE_DEVICES"), "GPU-7ef570db1b346018");
  EXPECT_EQ(env->at("TESSEL_DIST_BACKEND"), "nccl");
  EXPECT_EQ(env->at("TESSEL_DEVICE_TYPE"), "cuda");
  EXPECT_EQ(env->count("PT_ENABLE_INT64_SUPPORT"), 0u);
}

}  // namespace
