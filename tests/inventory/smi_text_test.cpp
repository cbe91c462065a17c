#include "tessel/agent/smi_text.hpp"

#include <gtest/gtest.h>

namespace tessel::agent::smi {
namespace {

std::optional<int64_t> q(std::string_view cell, std::string_view unit) {
  auto r = parse_quantity(cell, unit);
  EXPECT_TRUE(r.ok()) << cell << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : std::nullopt;
}

TEST(SmiText, QuantityWithAndWithoutUnits) {
  EXPECT_EQ(q("131072 MiB", "MiB"), 131072);
  EXPECT_EQ(q("131072", "MiB"), 131072);
  EXPECT_EQ(q("512 Mib", "MiB"), 512);  // Old drivers.
  EXPECT_EQ(q("226 W", "W"), 226);
  EXPECT_EQ(q("36 C", "C"), 36);
  EXPECT_EQ(q("0 %", "%"), 0);
  EXPECT_EQ(q("  7  ", ""), 7);
  EXPECT_EQ(q("226.53 W", "W"), 227);
  EXPECT_EQ(q("226.49", "W"), 226);
  EXPECT_EQ(q("N/A", "W"), std::nullopt);
  EXPECT_EQ(q("[N/A]", "W"), std::nullopt);
  EXPECT_EQ(q("[Not Supported]", "%"), std::nullopt);
}

TEST(SmiText, QuantityRejectsWhatItCannotRead) {
  for (std::string_view bad : {"", "abc", "12 W", "-3", "1.", ".5", "12 MiB extra", "99999999999999999999999"}) {
    auto r = parse_quantity(bad, "MiB");
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_FALSE(parse_quantity("36 C", "").ok());
  auto r = parse_quantity("abc", "MiB");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "expected a number of MiB, got \"abc\"");
}

TEST(SmiText, SmallInt) {
  EXPECT_EQ(*parse_small_int(" 7 ", 1023), 7);
  EXPECT_FALSE(parse_small_int("N/A", 1023).ok());
  EXPECT_FALSE(parse_small_int("1024", 1023).ok());
  EXPECT_FALSE(parse_small_int("-1", 1023).ok());
  EXPECT_FALSE(parse_small_int("", 1023).ok());
}

TEST(SmiText, HeaderCells) {
  auto h = parse_header_cell(" memory.used [MiB] ");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->name, "memory.used");
  EXPECT_EQ(h->unit, "MiB");
  EXPECT_EQ(parse_header_cell("temperature.gpu")->unit, "");
  EXPECT_FALSE(parse_header_cell("0"));
  EXPECT_FALSE(parse_header_cell("HL-225"));
  EXPECT_FALSE(parse_header_cell("memory.used [MiB"));
  EXPECT_FALSE(parse_header_cell(""));
}

TEST(SmiText, LinesAndCells) {
  auto lines = split_lines("a\r\nb\n\nc");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "c");
  EXPECT_EQ(split_lines("a\n").size(), 1u);
  auto cells = split_cells(" a ,b,  c  ,");
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0], "a");
  EXPECT_EQ(cells[3], "");
}

TEST(SmiText, QuoteLineEscapesAndCuts) {
  EXPECT_EQ(quote_line("a\"b\x01"), "\"a\\\"b\\x01\"");
  std::string longline(300, 'x');
  EXPECT_EQ(quote_line(longline).size(), 122u + 3u);
}

}  // namespace
}  // namespace tessel::agent::smi
