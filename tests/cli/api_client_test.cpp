#include "tessel/cli/api_client.hpp"

#include <gtest/gtest.h>

namespace tessel::cli {
namespace {

TEST(ServerUrl, Parses) {
  auto u = parse_server_url("http://127.0.0.1:7450");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 7450);
  EXPECT_EQ(u->origin(), "http://127.0.0.1:7450");
  EXPECT_EQ(parse_server_url("http://sched/")->port, 80);
  EXPECT_EQ(parse_server_url("https://sched")->port, 443);
  auto v6 = parse_server_url("http://[::1]:8080");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->origin(), "http://[::1]:8080");
}

TEST(ServerUrl, Rejects) {
  for (const char* bad : {"", "127.0.0.1:7450", "ftp://x", "http://", "http://x:", "http://x:0", "http://x:65536",
                          "http://x:12a", "http://x/api", "http://u@x", "http://x?y", "http://[::1"}) {
    auto r = parse_server_url(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().message.rfind("invalid server URL '", 0), 0u) << r.error().message;
    }
  }
}

TEST(UrlEncode, KeepsUnreserved) {
  EXPECT_EQ(url_encode("j-1_a.b~"), "j-1_a.b~");
  EXPECT_EQ(url_encode("a b/c?d"), "a%20b%2Fc%3Fd");
}

TEST(ErrorBody, ApiShapeAndFallback) {
  EXPECT_EQ(
      describe_error_body(
          400,
          R"({"error":{"code":"invalid_argument","message":"devices: must be one of 0, 1, 2, 4, 8","field":"devices"}})"),
      "devices: must be one of 0, 1, 2, 4, 8 (invalid_argument)");
  EXPECT_EQ(describe_error_body(404, R"({"error":{"message":"no such job"}})"), "no such job");
  EXPECT_EQ(describe_error_body(502, "Bad Gateway\nmore"), "HTTP 502: Bad Gateway");
  EXPECT_EQ(describe_error_body(500, ""), "HTTP 500");
}

TEST(ApiClient, CreateChecksUrl) {
  auto c = ApiClient::create("nope", "", std::chrono::seconds(1));
  EXPECT_FALSE(c.ok());
  if (!tls_supported()) {
    auto s = ApiClient::create("https://x", "", std::chrono::seconds(1));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("TLS is not supported by this build"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessel::cli
