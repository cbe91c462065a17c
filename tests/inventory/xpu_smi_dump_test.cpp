// The xpu-smi dump parser on a recorded and an assembled output (tests/fixtures/xpu-smi,
// README there), N/A readings, several samples and malformed input.
#include "tessel/agent/xpu_smi_dump.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace tessel::agent::intel {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_xpu_smi_dump(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

constexpr std::string_view kHeader =
    "Timestamp, DeviceId, GPU Utilization (%), GPU Power (W), GPU Core Temperature (C), GPU Memory Used (MiB)\n";

TEST(XpuSmiDump, RealMax1100TwoCards) {
  // Asked for more metrics than the inventory asks for; the extra columns are skipped.
  auto r = parse_xpu_smi_dump(fixture("xpu-smi/max1100-2-dump.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (smi::Telemetry{0, 0, std::nullopt, 107, 28}));  // Temperature N/A (not root).
  EXPECT_EQ((*r)[1], (smi::Telemetry{1, 0, std::nullopt, 105, 28}));
}

TEST(XpuSmiDump, AssembledMax1550FourCards) {
  auto r = parse_xpu_smi_dump(fixture("xpu-smi/max1550-4-dump.csv"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0], (smi::Telemetry{0, 88, 61, 412, 98305}));
  EXPECT_EQ((*r)[2], (smi::Telemetry{2, std::nullopt, std::nullopt, 181, 24}));
}

TEST(XpuSmiDump, LaterSamplesReplaceEarlierOnesButNaDoesNot) {
  auto r = parse_xpu_smi_dump(std::string(kHeader) +
                              "23:48:25.043,    1,  N/A, 280.50, 50, 10\n"
                              "23:48:25.043,    0,  N/A, 279.00, N/A, 11\n"
                              "23:48:26.043,    1, 12.00, 286.91, N/A, 12\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], (smi::Telemetry{0, std::nullopt, std::nullopt, 279, 11}));
  EXPECT_EQ((*r)[1], (smi::Telemetry{1, 12, 50, 287, 12}));  // Sorted by index.
}

TEST(XpuSmiDump, HeaderOnlyOrCrlfAndBlankLines) {
  auto r = parse_xpu_smi_dump(kHeader);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->empty());
  r = parse_xpu_smi_dump("\r\nTimestamp, DeviceId, GPU Power (W)\r\n\r\n1:2:3,  4, 7.4\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<smi::Telemetry>{{4, std::nullopt, std::nullopt, 7, std::nullopt}}));
}

TEST(XpuSmiDump, MalformedOutput) {
  EXPECT_EQ(parse_error(""), "xpu-smi dump: no header row with DeviceId");
  EXPECT_EQ(parse_error("Error: Device not found\n"),
            "xpu-smi dump: no header row with DeviceId, got \"Error: Device not found\"");
  EXPECT_EQ(parse_error(std::string(kHeader) + "1:2:3, 0, 1, 2\n"), "xpu-smi dump line 2: 4 cells, the header has 6");
  EXPECT_EQ(parse_error(std::string(kHeader) + "1:2:3, x, 1, 2, 3, 4\n").rfind("xpu-smi dump line 2: DeviceId: ", 0),
            0u);
  EXPECT_EQ(parse_error(std::string(kHeader) + "1:2:3, 0, 1, 2, hot, 4\n").rfind("xpu-smi dump line 2: ", 0), 0u);
  std::string many(kHeader);
  for (int i = 0; i < 65; ++i) many += "1:2:3, " + std::to_string(i) + ", 1, 2, 3, 4\n";
  EXPECT_EQ(parse_error(many), "xpu-smi dump line 66: more than 64 devices");
}

TEST(XpuSmiDump, ArgsDumpAllCardsOnce) {
  EXPECT_EQ(dump_args(), (std::vector<std::string>{"dump", "-d", "-1", "-m", "0,1,3,18", "-n", "1"}));
}

}  // namespace
}  // namespace tessel::agent::intel
