#include <gtest/gtest.h>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/smi_text.hpp"
#include "test_util.hpp"

namespace tessel::agent::smi {
namespace {

using testing::fixture;

std::string error_of(const Result<ParsedDevices>& r) { return r.ok() ? std::string("(ok)") : r.error().message; }

TEST(NvidiaSmiParse, HeaderWithUnits) {
  auto r = parse_nvidia_smi(fixture("nvidia-smi/raw-h100-header-units.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->driver_version, "550.54.15");
  const api::Device& d = r->devices[1];
  EXPECT_EQ(d.index, 1);
  EXPECT_EQ(d.module_id, 1);  // NVIDIA: module_id = index.
  EXPECT_EQ(d.bus_id, "00000000:29:00.0");
  EXPECT_EQ(d.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.uuid, "GPU-a1b2c3d1-1b2c-4d5e-8f90-001234567891");
  EXPECT_EQ(d.memory_total_mib, 81559);
  EXPECT_EQ(d.memory_used_mib, 1024);
  EXPECT_EQ(d.utilization_pct, 11);
  EXPECT_EQ(d.temperature_c, 32);
  EXPECT_EQ(d.power_w, 71);  // 71.29 W
}

TEST(NvidiaSmiParse, NoHeaderNoUnitsFractionalPowerRounds) {
  auto r = parse_nvidia_smi(fixture("nvidia-smi/raw-h200-noheader-nounits.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[0].power_w, 227);  // 226.53
  EXPECT_EQ(r->devices[0].memory_total_mib, 143771);
  EXPECT_EQ(r->devices[7].module_id, 7);
}

TEST(NvidiaSmiParse, BracketedNotAvailable) {
  auto r = parse_nvidia_smi(fixture("nvidia-smi/raw-h200-na-units.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[2].power_w, std::nullopt);
  EXPECT_EQ(r->devices[4].serial, "");
  EXPECT_EQ(r->devices[6].utilization_pct, std::nullopt);
  EXPECT_EQ(r->devices[6].power_w, 235);  // 234.75
}

TEST(NvidiaSmiParse, CrlfAndSpaces) {
  auto r = parse_nvidia_smi(
      "0 ,  00000000:18:00.0, NVIDIA H200 ,  1, GPU-x, 550.54.15, 143771 MiB, 0 MiB, 0 %, 31, 226.53 W\r\n\r\n");
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[0].model, "NVIDIA H200");
  EXPECT_EQ(r->devices[0].uuid, "GPU-x");
}

TEST(NvidiaSmiParse, ErrorsNameTheLine) {
  auto r = parse_nvidia_smi("0, a, b\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "nvidia-smi line 1: expected 11 fields, got 3: \"0, a, b\"");
  auto dup = parse_nvidia_smi("0, a, n, s, u, d, 1, 1, 1, 1, 1\n0, b, n, s, u, d, 1, 1, 1, 1, 1\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("nvidia-smi line 2: duplicate index 0"), std::string::npos);
  // nvidia-smi has no module_id field.
  auto bogus = parse_nvidia_smi("0\n", {"index", "module_id"});
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.error().message, "nvidia-smi: unknown field \"module_id\"");
}

}  // namespace
}  // namespace tessel::agent::smi
