#include "tessel/base/printable.hpp"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(Printable, EscapesControlBytesAndKeepsTheRest) {
  EXPECT_EQ(printable("plain text, ünïcode"), "plain text, ünïcode");
  EXPECT_EQ(printable("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(printable(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(printable("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(printable("a\\nb"), "a\\\\nb");  // A literal backslash cannot fake an escape.
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, AForgedLogLineStaysOnOneLine) {
  const std::string forged = "ok\n2026-12-01T00:00:00 info scheduler: node n1 registered";
  EXPECT_EQ(printable(forged).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace tessel
