#include "tessel/base/host_port.hpp"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(HostPort, SplitsNameAddressAndBracketedIpv6) {
  auto a = parse_host_port("node-1:7451");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->host, "node-1");
  EXPECT_EQ(a->port, 7451);

  auto b = parse_host_port("0.0.0.0:0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "0.0.0.0");
  EXPECT_EQ(b->port, 0);

  auto c = parse_host_port("[::1]:65535");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 65535);
}

TEST(HostPort, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"", "node", ":80", "node:", "node:65536", "node:-1", "node:80x", "node: 80", "[::1]",
                          "[::1]80", "[::1:80", "node:123456"}) {
    auto r = parse_host_port(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument) << bad;
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos) << r.error().message;
  }
}

TEST(HostPort, PortIsDecimalWithinRange) {
  EXPECT_EQ(parse_port("0"), 0);
  EXPECT_EQ(parse_port("8080"), 8080);
  EXPECT_EQ(parse_port("65535"), 65535);
  EXPECT_EQ(parse_port("65536"), -1);
  EXPECT_EQ(parse_port("+1"), -1);
  EXPECT_EQ(parse_port(""), -1);
}

}  // namespace
}  // namespace tessel
