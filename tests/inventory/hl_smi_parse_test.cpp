#include <gtest/gtest.h>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/agent/smi_text.hpp"
#include "test_util.hpp"

namespace tessel::agent::smi {
namespace {

using testing::fixture;

std::vector<int> module_ids(const ParsedDevices& p) {
  std::vector<int> out;
  for (const auto& d : p.devices) out.push_back(d.module_id);
  return out;
}

std::string error_of(const Result<ParsedDevices>& r) { return r.ok() ? std::string("(ok)") : r.error().message; }

TEST(HlSmiParse, Gaudi3WithUnitsNoHeader) {
  auto r = parse_hl_smi(fixture("hl-smi/raw-gaudi3-units-noheader.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->driver_version, "1.19.0-fw-53.1.1");
  ASSERT_EQ(r->devices.size(), 8u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.module_id, 0);
  EXPECT_EQ(d.bus_id, "0000:19:00.0");
  EXPECT_EQ(d.model, "HL-325L");
  EXPECT_EQ(d.serial, "HL309000");
  EXPECT_EQ(d.uuid, "01P0-HLHL30-18-U4V103-22-07-00");
  EXPECT_EQ(d.memory_total_mib, 131072);
  EXPECT_EQ(d.memory_used_mib, 672);
  EXPECT_EQ(d.utilization_pct, 0);
  EXPECT_EQ(d.temperature_c, 30);
  EXPECT_EQ(d.power_w, 226);
  EXPECT_TRUE(d.healthy);
  EXPECT_EQ(r->devices[7].power_w, 233);
}

TEST(HlSmiParse, HeaderDecidesColumnOrderEvenWithNounits) {
  // The header lists the columns in another order than requested; units stay in brackets.
  auto r = parse_hl_smi(fixture("hl-smi/raw-gaudi1-header-nounits.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->devices[1].model, "HL-205");
  EXPECT_EQ(r->devices[1].memory_total_mib, 32768);
  EXPECT_EQ(r->devices[1].memory_used_mib, 688);
  EXPECT_EQ(r->devices[1].power_w, 104);
  EXPECT_EQ(r->devices[1].bus_id, "0000:b3:00.0");
  EXPECT_EQ(r->driver_version, "1.2.3-fw-30.0.1");
}

TEST(HlSmiParse, IndexAndModuleIdDiffer) {
  auto r = parse_hl_smi(fixture("hl-smi/raw-gaudi2-header-units.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(module_ids(*r), (std::vector<int>{1, 3, 2, 6, 0, 7, 5, 4}));
  for (size_t i = 0; i < r->devices.size(); ++i) EXPECT_EQ(r->devices[i].index, static_cast<int>(i));
}

TEST(HlSmiParse, OldMibUnit) {
  auto r = parse_hl_smi(fixture("hl-smi/raw-old-mib.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[0].memory_total_mib, 32768);
}

TEST(HlSmiParse, ExtraSpacesAndBlankTrailingLines) {
  auto r = parse_hl_smi(fixture("hl-smi/raw-extra-spaces.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  ASSERT_EQ(r->devices.size(), 8u);
  EXPECT_EQ(r->devices[2].memory_used_mib, 704);
  EXPECT_EQ(r->devices[2].model, "HL-325L");
}

TEST(HlSmiParse, CrlfLineEndings) {
  std::string text = fixture("hl-smi/raw-gaudi2-header-units.txt");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto a = parse_hl_smi(text);
  auto b = parse_hl_smi(crlf);
  ASSERT_TRUE(b.ok()) << error_of(b);
  EXPECT_EQ(a->devices, b->devices);
}

TEST(HlSmiParse, NotAvailableTelemetryIsNullNotAnError) {
  auto r = parse_hl_smi(fixture("hl-smi/raw-na-telemetry.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[1].power_w, std::nullopt);
  EXPECT_EQ(r->devices[1].temperature_c, std::nullopt);
  EXPECT_EQ(r->devices[1].memory_total_mib, 98304);
  EXPECT_EQ(r->devices[3].utilization_pct, std::nullopt);
  EXPECT_EQ(r->devices[3].memory_used_mib, std::nullopt);
  EXPECT_EQ(r->devices[5].serial, "");
  EXPECT_TRUE(r->devices[5].healthy);
}

TEST(HlSmiParse, RealRowFromTheFactsSheet) {
  // Gaudi 1 with header and nounits, as captured in public code.
  const std::vector<std::string> fields = {
      "name",        "uuid",         "power.draw", "temperature.aip", "utilization.aip",
      "memory.used", "memory.total", "index",      "module_id"};
  auto r = parse_hl_smi(
      "name, uuid, power.draw [W], temperature.aip [C], utilization.aip [%], memory.used [MiB], memory.total "
      "[MiB], index, module_id\n"
      "HL-205, 00P1-HL2000A1-14-P64W99-13-05-03, 103, 36, 15, 512, 32768, 0, 0\n",
      fields);
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[0].uuid, "00P1-HL2000A1-14-P64W99-13-05-03");
  EXPECT_EQ(r->devices[0].temperature_c, 36);
  EXPECT_EQ(r->devices[0].bus_id, "");
}

TEST(HlSmiParse, ShortRowNamesLineAndContent) {
  std::string text = fixture("hl-smi/raw-gaudi3-units-noheader.txt");
  auto lines = split_lines(text);
  std::string broken = std::string(lines[0]) + "\n" + std::string(lines[1]) + "\n2, 2, 0000:1a:00.0, HL-325L, X\n";
  auto r = parse_hl_smi(broken);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "hl-smi line 3: expected 12 fields, got 5: \"2, 2, 0000:1a:00.0, HL-325L, X\"");
}

TEST(HlSmiParse, BadValueNamesFieldAndLine) {
  auto r = parse_hl_smi("0, 0, b, HL-225, s, u, d, lots MiB, 1 MiB, 0 %, 30 C, 200 W\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "hl-smi line 1: memory.total: expected a number of MiB, got \"lots MiB\": \"0, 0, b, HL-225, s, u, d, "
            "lots MiB, 1 MiB, 0 %, 30 C, 200 W\"");
  auto wrong_unit = parse_hl_smi("0, 0, b, HL-225, s, u, d, 10 W, 1 MiB, 0 %, 30 C, 200 W\n");
  EXPECT_FALSE(wrong_unit.ok());
  auto na_index = parse_hl_smi("N/A, 0, b, HL-225, s, u, d, 10, 1, 0, 30, 200\n");
  ASSERT_FALSE(na_index.ok());
  EXPECT_NE(na_index.error().message.find("line 1: index: expected an integer"), std::string::npos);
}

TEST(HlSmiParse, DuplicateIndexOrModuleIdIsAnError) {
  auto dup_index =
      parse_hl_smi("0, 0, a, HL-225, s, u, d, 1, 1, 0, 30, 200\n0, 1, b, HL-225, s, u, d, 1, 1, 0, 30, 200\n");
  ASSERT_FALSE(dup_index.ok());
  EXPECT_NE(dup_index.error().message.find("hl-smi line 2: duplicate index 0 (also on line 1)"), std::string::npos)
      << dup_index.error().message;
  auto dup_module =
      parse_hl_smi("0, 5, a, HL-225, s, u, d, 1, 1, 0, 30, 200\n1, 5, b, HL-225, s, u, d, 1, 1, 0, 30, 200\n");
  ASSERT_FALSE(dup_module.ok());
  EXPECT_NE(dup_module.error().message.find("hl-smi line 2: duplicate module_id 5"), std::string::npos);
}

TEST(HlSmiParse, HeaderMustHoldRequestedFields) {
  auto r = parse_hl_smi("index, name\n0, HL-225\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("hl-smi line 1: header lacks requested field \"module_id\""), std::string::npos);
  // A header without the index column cannot be read at all.
  auto no_index = parse_hl_smi("module_id, name\n0, HL-225\n", {"module_id", "name"});
  ASSERT_FALSE(no_index.ok());
  EXPECT_EQ(no_index.error().message, "hl-smi: output has no \"index\" column");
}

TEST(HlSmiParse, TextCellsMustBePrintableAsciiWithinWireLimits) {
  // Found by fuzz_hl_smi: a non-UTF-8 byte made api::to_json(...).dump() throw.
  auto bad_byte = parse_hl_smi("0, 0, b, HL-\xff, s, u, d, 1, 1, 0, 30, 200\n");
  ASSERT_FALSE(bad_byte.ok());
  EXPECT_NE(bad_byte.error().message.find("hl-smi line 1: name: unexpected byte 0xff"), std::string::npos)
      << bad_byte.error().message;
  auto too_long = parse_hl_smi("0, 0, b, " + std::string(65, 'x') + ", s, u, d, 1, 1, 0, 30, 200\n");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("name: longer than 64 characters"), std::string::npos);
}

TEST(HlSmiParse, UnknownRequestedFieldIsAnError) {
  auto r = parse_hl_smi("0\n", {"index", "bogus"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "hl-smi: unknown field \"bogus\"");
}

TEST(HlSmiParse, SortsByIndexAndAcceptsEmptyOutput) {
  auto r = parse_hl_smi("1, 0, a, HL-225, s, u, d, 1, 1, 0, 30, 200\n0, 1, b, HL-225, s, u, d, 1, 1, 0, 30, 200\n");
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->devices[0].index, 0);
  EXPECT_EQ(r->devices[0].module_id, 1);
  auto empty = parse_hl_smi("\n\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->devices.empty());
}

TEST(HlSmiParse, GarbageIsAnErrorNeverAGuess) {
  auto r = parse_hl_smi("#!@ this is not csv\n0, 1, 2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "hl-smi line 1: expected 12 fields, got 1: \"#!@ this is not csv\"");
}

}  // namespace
}  // namespace tessel::agent::smi
