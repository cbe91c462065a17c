#include "tessel/cli/duration.hpp"

#include <gtest/gtest.h>

namespace tessel::cli {
namespace {

int64_t ok(const char* s) {
  auto r = parse_duration(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r ? "" : r.error().message);
  return r ? *r : -1;
}

std::string err(const char* s) {
  auto r = parse_duration(s);
  EXPECT_FALSE(r.ok()) << s << " parsed as " << (r ? *r : 0);
  return r ? "" : r.error().message;
}

TEST(Duration, BareNumberIsSeconds) {
  EXPECT_EQ(ok("90"), 90);
  EXPECT_EQ(ok("0"), 0);
}

TEST(Duration, Units) {
  EXPECT_EQ(ok("90s"), 90);
  EXPECT_EQ(ok("15m"), 900);
  EXPECT_EQ(ok("2h"), 7200);
  EXPECT_EQ(ok("1d"), 86400);
  EXPECT_EQ(ok("1h30m"), 5400);
  EXPECT_EQ(ok("1d2h3m4s"), 93784);
  EXPECT_EQ(ok("90m"), 5400);  // A unit may exceed the next one up.
}

TEST(Duration, SlurmColonForms) {
  EXPECT_EQ(ok("01:30:00"), 5400);
  EXPECT_EQ(ok("1:02:03"), 3723);
  EXPECT_EQ(ok("90:00"), 5400);  // MM:SS, first field unbounded.
  EXPECT_EQ(ok("100:00:00"), 360000);
  EXPECT_EQ(ok("2-12"), 2 * 86400 + 12 * 3600);
  EXPECT_EQ(ok("1-00:30"), 86400 + 1800);
  EXPECT_EQ(ok("1-02:03:04"), 93784);
}

TEST(Duration, RejectsBadInput) {
  EXPECT_NE(err("").find("empty"), std::string::npos);
  EXPECT_NE(err("1x").find("unknown unit 'x'"), std::string::npos);
  EXPECT_NE(err("1h30").find("without a unit"), std::string::npos);
  EXPECT_NE(err("30m1h").find("largest to smallest"), std::string::npos);
  EXPECT_NE(err("1h1h").find("largest to smallest"), std::string::npos);
  err("-5");
  err("+5");
  err(" 5");
  err("5 ");
  err("1.5h");
  err("h");
  err("1H");
  err("1:60");
  err("1:00:60");
  err("1:60:00");
  err("1-24");
  err("1-");
  err("-1:00");
  err("1:2:3:4");
  err("1::2");
  err(":");
  err("1-2-3");
}

TEST(Duration, RejectsHugeValuesWithoutOverflow) {
  EXPECT_NE(err("99999999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(err("9999999999d").find("too large"), std::string::npos);
  err("999999999999:00:00");
  err("99999999-00");
  EXPECT_EQ(ok("36500d"), 36500LL * 86400);
}

TEST(Duration, MessageQuotesInput) {
  EXPECT_EQ(err("2x"), "invalid duration '2x': unknown unit 'x' (use s, m, h or d)");
}

TEST(Duration, FormatAge) {
  EXPECT_EQ(format_age(-3), "0s");
  EXPECT_EQ(format_age(45), "45s");
  EXPECT_EQ(format_age(119), "119s");
  EXPECT_EQ(format_age(120), "2m");
  EXPECT_EQ(format_age(7199), "119m");
  EXPECT_EQ(format_age(7200), "2h");
  EXPECT_EQ(format_age(3 * 86400), "3d");
}

TEST(Duration, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(5400), "1h30m");
  EXPECT_EQ(format_duration(93784), "1d2h3m4s");
  EXPECT_EQ(format_duration(86400), "1d");
}

}  // namespace
}  // namespace tessel::cli
