// connection_cap(): the connection cap that fits an open-file limit.
#include "tessel/http/fd_limit.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

namespace {

using tessel::http::connection_cap;

TEST(ConnectionCap, ADefaultThatFitsIsKept) {
  EXPECT_EQ(connection_cap(524'288, 65'536, 1, false, "--x"), 65'536u);
  EXPECT_EQ(connection_cap(524'288, 4096, 2, false, "--x"), 4096u);
}

TEST(ConnectionCap, ADefaultIsLoweredTo256BelowTheLimitPerDescriptorsEach) {
  EXPECT_EQ(connection_cap(1024, 65'536, 1, false, "--x"), 768u);
  // A log reader holds its connection and the log file.
  EXPECT_EQ(connection_cap(1024, 4096, 2, false, "--x"), 384u);
  EXPECT_EQ(connection_cap(20'000, 4096, 2, false, "--x"), 4096u);
}

TEST(ConnectionCap, AnExplicitValueIsKeptEvenWhenItDoesNotFit) {
  EXPECT_EQ(connection_cap(1024, 65'536, 1, true, "--x"), 65'536u);
}

TEST(ConnectionCap, ATinyLimitStillLeavesAtLeastOneConnection) {
  EXPECT_EQ(connection_cap(256, 4096, 1, false, "--x"), 128u);
  EXPECT_EQ(connection_cap(1, 4096, 2, false, "--x"), 1u);
  EXPECT_EQ(connection_cap(0, 4096, 0, false, "--x"), 1u);
}

TEST(RaiseFdLimit, TheSoftLimitBecomesTheHardOneUpTo2To20) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  const uint64_t now = tessel::http::raise_fd_limit();
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(now, after.rlim_cur);
  EXPECT_GE(after.rlim_cur, before.rlim_cur);
  EXPECT_EQ(after.rlim_cur, std::min<rlim_t>(after.rlim_max, rlim_t{1} << 20));
}

}  // namespace
