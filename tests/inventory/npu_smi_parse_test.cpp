// The npu-smi info table parser on real outputs (tests/fixtures/npu-smi, README there)
// and on malformed input.
#include "tessel/agent/npu_smi_parse.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tessel::agent::ascend {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_npu_smi_info(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

const char* const kHeader =
    "+---------------------------------------------------------------+\n"
    "| npu-smi 23.0.0              Version: 23.0.0                   |\n"
    "+----------------------+---------------+------------------------+\n"
    "| NPU   Name           | Health        | Power(W)    Temp(C)    |\n"
    "| Chip                 | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB) |\n"
    "+======================+===============+========================+\n";

TEST(NpuSmiParse, RealAtlas800TrainingServer910a) {
  auto r = parse_npu_smi_info(fixture("npu-smi/atlas800-9010-910a-8-info.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->driver_version, "24.1.RC2");
  ASSERT_EQ(r->devices.size(), 8u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.module_id, 0);
  EXPECT_EQ(d.model, "xxx");  // The capture's name column is redacted.
  EXPECT_EQ(d.bus_id, "0000:C1:00.0");
  EXPECT_EQ(d.uuid, "NPU-0000:c1:00.0");
  EXPECT_EQ(d.serial, "");
  EXPECT_EQ(d.power_w, 71);  // 70.5 rounded.
  EXPECT_EQ(d.temperature_c, 42);
  EXPECT_EQ(d.utilization_pct, 0);
  EXPECT_EQ(d.memory_total_mib, 32768);  // HBM, not the 15137 MB of DDR beside it.
  EXPECT_EQ(d.memory_used_mib, 0);
  EXPECT_TRUE(d.healthy);
  // NPU 3 and 7 report Warning (a minor alarm): still usable.
  EXPECT_TRUE(r->devices[3].healthy);
  EXPECT_EQ(r->devices[3].power_w, 207);
  EXPECT_EQ(r->devices[7].bus_id, "0000:02:00.0");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r->devices[i].index, i);
}

TEST(NpuSmiParse, RealAtlas300With4ChipsOfOneNpu) {
  auto r = parse_npu_smi_info(fixture("npu-smi/atlas800-3000-310-4chip-info.txt"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->driver_version, "21.0.4.B030");
  ASSERT_EQ(r->devices.size(), 4u);
  // Four chips of NPU 6, named by their logical device ids 3..6.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r->devices[i].index, 3 + i);
    EXPECT_EQ(r->devices[i].module_id, 3 + i);
    EXPECT_EQ(r->devices[i].model, "310");
  }
  EXPECT_EQ(r->devices[1].bus_id, "0000:8A:00.0");
  EXPECT_EQ(r->devices[1].memory_total_mib, 8192);  // No HBM column: Memory-Usage.
  EXPECT_EQ(r->devices[1].memory_used_mib, 2867);
  EXPECT_EQ(r->devices[3].temperature_c, 65);
}

TEST(NpuSmiParse, UnhealthyAndNaReadings) {
  std::string t = std::string(kHeader) +
                  "| 0     910B3        | Alarm         | NA          NA                0 / 0 |\n"
                  "| 0                    | 0000:C1:00.0  | -           0 / 0        3161 / 65536 |\n"
                  "+======================+===============+========================+\n"
                  "| No running processes found in NPU 0                           |\n";
  auto r = parse_npu_smi_info(t);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  const api::Device& d = r->devices[0];
  EXPECT_FALSE(d.healthy);
  EXPECT_EQ(d.health_reason, "npu-smi health: Alarm");
  EXPECT_FALSE(d.power_w.has_value());
  EXPECT_FALSE(d.temperature_c.has_value());
  EXPECT_FALSE(d.utilization_pct.has_value());
  EXPECT_EQ(d.memory_total_mib, 65536);
  EXPECT_EQ(d.memory_used_mib, 3161);
}

TEST(NpuSmiParse, CrlfAndTableWithoutDevices) {
  std::string t = kHeader;
  for (size_t at = t.find('\n'); at != std::string::npos; at = t.find('\n', at + 2)) t.insert(at, "\r");
  auto r = parse_npu_smi_info(t);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->devices.empty());
  EXPECT_EQ(r->driver_version, "23.0.0");
}

TEST(NpuSmiParse, Malformed) {
  EXPECT_EQ(parse_error(""), "npu-smi: no device table");
  EXPECT_EQ(parse_error("dcmi module initialize failed. ret is -8005\n"), "npu-smi: no device table");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0                    | 0000:C1:00.0  | 0  0 / 1 |\n"),
            "npu-smi line 7: chip row before any NPU row");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| x     910B3   | OK   | 1  2 |\n"),
            "npu-smi line 7: NPU id must be an integer 0..1023");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0 910B3 | OK |\n"), "npu-smi line 7: expected at least 3 cells");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0 910B3 | OK | 1 2 |\n| 0 | 0000:C1:00.0 | 0 |\n" +
                        "| 0 910B3 | OK | 1 2 |\n| 0 | 0000:C2:00.0 | 0 |\n"),
            "npu-smi line 10: duplicate device 0");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0 910B3 | OK | 1 2 |\n| 0 1 2 | 0000:C1:00.0 | 0 |\n"),
            "npu-smi line 8: chip cell must hold \"Chip\" or \"Chip Device\"");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0 910B3 | O\x01K | 1 2 |\n"), "npu-smi line 7: not printable ASCII");
  EXPECT_EQ(parse_error(std::string(kHeader) + "| 0 " + std::string(70, 'n') + " | OK | 1 2 |\n"),
            "npu-smi line 7: name longer than 64 bytes");
}

TEST(NpuSmiParse, AtMost64Devices) {
  std::string t = kHeader;
  for (int i = 0; i < 65; ++i) {
    char bus[16];
    std::snprintf(bus, sizeof bus, "0000:%02X:00.0", i);
    t += "| " + std::to_string(i) + " 910B3 | OK | 1 2 |\n| 0 | " + bus + " | 0 0 / 1 |\n";
  }
  EXPECT_EQ(parse_error(t), "npu-smi: more than 64 devices");
}

}  // namespace
}  // namespace tessel::agent::ascend
