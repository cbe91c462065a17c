// The rocm-smi fallback: the parser on the published real output (tests/fixtures/rocm-smi)
// and tolerant reading, and the AMD inventory reading rocm-smi when amd-smi is absent.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tessel/agent/amd_smi_inventory.hpp"
#include "tessel/agent/rocm_smi_parse.hpp"
#include "tessel/agent/vendor_detect.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using nlohmann::json;
using testing::ScopedEnv;

TEST(RocmSmiParse, TwoMi100WithRocrIds) {
  auto r = amd::parse_rocm_smi(testing::fixture("rocm-smi/determined-2.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].index, 0);
  EXPECT_EQ(r->devices[0].uuid, "GPU-7ef570db1b346018");
  EXPECT_EQ(r->devices[0].bus_id, "0000:63:00.0");
  EXPECT_EQ(r->devices[0].model, "D34304");
  EXPECT_EQ(r->devices[1].uuid, "GPU-6be2ee3b2b314cfc");
}

TEST(RocmSmiParse, TolerantFieldsAndUsage) {
  json doc = {{"system", {{"Driver version", "6.2.4"}}},
              {"card1",
               {{"Card series", "AMD Instinct MI210"},
                {"Unique ID", "N/A"},
                {"VRAM Total Memory (B)", "68702699520"},
                {"VRAM Total Used Memory (B)", "bad"},
                {"GPU use (%)", "12"},
                {"Temperature (Sensor junction) (C)", "41.0"},
                {"Average Graphics Package Power (W)", 43}}},
              {"cardX", {{"GPU ID", "0x740f"}}}};
  auto r = amd::parse_rocm_smi(doc.dump());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.model, "AMD Instinct MI210");
  EXPECT_EQ(d.uuid, "");  // No serial: device_env falls back to the index.
  EXPECT_EQ(d.memory_total_mib, 65520);
  EXPECT_FALSE(d.memory_used_mib.has_value());
  EXPECT_EQ(d.utilization_pct, 12);
  EXPECT_EQ(d.temperature_c, 41);
  EXPECT_EQ(d.power_w, 43);
}

TEST(RocmSmiParse, BadOutputGivesClearErrors) {
  auto error = [](std::string_view text) {
    auto r = amd::parse_rocm_smi(text);
    return r.ok() ? std::string("(ok)") : r.error().message;
  };
  EXPECT_EQ(error(""), "rocm-smi: not JSON");
  EXPECT_EQ(error(R"({"card0": {"GPU ID": "0x7)"), "rocm-smi: not JSON");
  EXPECT_EQ(error("[]"), "rocm-smi: expected {\"card0\": {...}}");
  EXPECT_EQ(error(R"({"system": {}})"), "rocm-smi: expected {\"card0\": {...}}");
  EXPECT_EQ(error(R"({"card99999": {}})"), "rocm-smi: expected {\"card0\": {...}}");
  EXPECT_EQ(error(R"({"card01": {}})"), "rocm-smi: expected {\"card0\": {...}}");  // Not a card name.
  json many = json::object();
  for (int i = 0; i < 65; ++i) many["card" + std::to_string(i)] = json::object();
  EXPECT_EQ(error(many.dump()), "rocm-smi: more than 64 devices");
}

TEST(RocmSmiFallback, AmdInventoryReadsRocmSmiWhenAmdSmiIsAbsent) {
  ScopedEnv fixture("FAKE_ROCM_SMI_FIXTURE", testing::fixture_path("rocm-smi/determined-2.json"));
  ScopedEnv mode("FAKE_ROCM_SMI_MODE", "normal");
  ProcessRunner runner;
  InventoryConfig c;
  c.amd_smi = "amd-smi";  // Not in path_env.
  c.path_env = "/nonexistent:" + std::filesystem::path(FAKE_ROCM_SMI_PATH).parent_path().string();
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::amd);
  auto inv = make_amd_smi_inventory(runner, c)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::amd);
  ASSERT_EQ(inv->devices.size(), 2u);
  EXPECT_EQ(inv->devices[1].uuid, "GPU-6be2ee3b2b314cfc");
  ScopedEnv fail("FAKE_ROCM_SMI_MODE", "fail");
  auto r = make_amd_smi_inventory(runner, c)->read();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("rocm-smi exited 3: ", 0), 0u) << r.error().message;
  // amd-smi present: it is read, not rocm-smi.
  c.amd_smi = FAKE_AMD_SMI_PATH;
  ScopedEnv amd_fail("FAKE_AMD_SMI_MODE", "fail");
  auto amd = make_amd_smi_inventory(runner, c)->read();
  ASSERT_FALSE(amd.ok());
  EXPECT_EQ(amd.error().message.rfind("amd-smi exited 3: ", 0), 0u) << amd.error().message;
}

// --rocm-smi: a path outside PATH, as the agent's and tessel-inventory's flag give it.
TEST(RocmSmiFallback, ItsPathCanBeGiven) {
  ScopedEnv fixture("FAKE_ROCM_SMI_FIXTURE", testing::fixture_path("rocm-smi/determined-2.json"));
  ScopedEnv mode("FAKE_ROCM_SMI_MODE", "normal");
  ProcessRunner runner;
  InventoryConfig c;
  c.amd_smi = "/nonexistent/amd-smi";
  c.rocm_smi = FAKE_ROCM_SMI_PATH;
  c.path_env = "/nonexistent";
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::amd);
  auto inv = make_amd_smi_inventory(runner, c)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->devices.size(), 2u);
  EXPECT_EQ(inv->devices[0].uuid, "GPU-7ef570db1b346018");
  c.rocm_smi = "/nonexistent/rocm-smi";
  EXPECT_FALSE(detect_vendor(c).ok());
}

}  // namespace
}  // namespace tessel::agent
