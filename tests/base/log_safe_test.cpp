#include "tessel/base/log_safe.hpp"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(LogSafe, EscapesControlBytesAndKeepsTheRest) {
  EXPECT_EQ(log_safe("plain text, ünïcode"), "plain text, ünïcode");
  EXPECT_EQ(log_safe("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(log_safe(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(log_safe("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(log_safe("a\\nb"), "a\\\\nb");  // A literal backslash cannot fake an escape.
  EXPECT_EQ(log_safe(""), "");
}

TEST(LogSafe, AForgedLogLineStaysOnOneLine) {
  const std::string forged = "ok\n2026-12-01T00:00:00 info scheduler: node n1 registered";
  EXPECT_EQ(log_safe(forged).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace tessel
