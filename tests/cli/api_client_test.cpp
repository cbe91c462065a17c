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

TEST(ServerUrl, ListsOfReplicas) {
  auto l = parse_server_urls("http://a:7450, http://b:7450,http://[::1]:9");
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[1].origin(), "http://b:7450");
  EXPECT_EQ((*l)[2].host, "::1");
  EXPECT_FALSE(parse_server_urls("http://a:7450,").ok());
  EXPECT_FALSE(parse_server_urls("http://a:7450,,http://b").ok());
}

TEST(ServerUrl, RedirectOriginKeepsSchemeHostAndPortOnly) {
  EXPECT_EQ(redirect_origin("http://leader:7450/v1/jobs?state=pending")->origin(), "http://leader:7450");
  EXPECT_EQ(redirect_origin("https://leader/v1/jobs")->origin(), "https://leader:443");
  EXPECT_EQ(redirect_origin("http://[::1]:8080#x")->origin(), "http://[::1]:8080");
  for (const char* bad : {"/v1/jobs", "leader:7450/v1/jobs", "ftp://leader/", "http://u@leader/", ""})
    EXPECT_FALSE(redirect_origin(bad).ok()) << bad;
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

TEST(ErrorBody, CodeFromTheEnvelopeElseTheStatus) {
  // The envelope's code wins, whatever the status.
  EXPECT_EQ(error_code_of(404, "not_found"), ErrorCode::not_found);
  EXPECT_EQ(error_code_of(405, "invalid_argument"), ErrorCode::invalid_argument);
  EXPECT_EQ(error_code_of(405, "method_not_allowed"), ErrorCode::method_not_allowed);
  EXPECT_EQ(error_code_of(500, "internal"), ErrorCode::internal);
  for (auto c :
       {ErrorCode::internal, ErrorCode::invalid_argument, ErrorCode::unauthenticated, ErrorCode::permission_denied,
        ErrorCode::not_found, ErrorCode::conflict, ErrorCode::payload_too_large, ErrorCode::unavailable,
        ErrorCode::method_not_allowed, ErrorCode::request_header_fields_too_large, ErrorCode::resource_exhausted})
    EXPECT_EQ(error_code_of(418, to_string(c)), c) << to_string(c);
  // No code, or one this build does not know: the status decides (tessel::error_code_of_http_status).
  EXPECT_EQ(error_code_of(400, ""), ErrorCode::invalid_argument);
  EXPECT_EQ(error_code_of(404, ""), ErrorCode::not_found);
  EXPECT_EQ(error_code_of(431, "request_header_fields_too_large"), ErrorCode::request_header_fields_too_large);
  EXPECT_EQ(error_code_of(405, ""), ErrorCode::method_not_allowed);
  EXPECT_EQ(error_code_of(503, "NOT_FOUND"), ErrorCode::unavailable);
  for (int other : {0, 302, 500, 502, 504}) EXPECT_EQ(error_code_of(other, ""), ErrorCode::internal) << other;
}

TEST(ErrorBody, ErrorKeepsMessageCodeAndField) {
  auto e = error_of_response(
      400,
      R"({"error":{"code":"invalid_argument","message":"devices: must be one of 0, 1, 2, 4, 8","field":"devices"}})");
  EXPECT_EQ(e.message, "devices: must be one of 0, 1, 2, 4, 8 (invalid_argument)");
  EXPECT_EQ(e.code, ErrorCode::invalid_argument);
  EXPECT_EQ(e.field, "devices");

  auto missing = error_of_response(404, R"({"error":{"code":"not_found","message":"no such job j-00000009"}})");
  EXPECT_EQ(missing.message, "no such job j-00000009 (not_found)");
  EXPECT_EQ(missing.code, ErrorCode::not_found);
  EXPECT_EQ(missing.field, "");

  auto storage = error_of_response(503, R"({"error":{"message":"storage unavailable"}})");
  EXPECT_EQ(storage.message, "storage unavailable");
  EXPECT_EQ(storage.code, ErrorCode::unavailable);

  auto proxy = error_of_response(502, "Bad Gateway\nmore");
  EXPECT_EQ(proxy.message, "HTTP 502: Bad Gateway");
  EXPECT_EQ(proxy.code, ErrorCode::internal);

  auto denied = error_of_response(403, "");
  EXPECT_EQ(denied.message, "HTTP 403");
  EXPECT_EQ(denied.code, ErrorCode::permission_denied);

  // A wrap() for context keeps both.
  auto wrapped = e.wrap("submit");
  EXPECT_EQ(wrapped.code, ErrorCode::invalid_argument);
  EXPECT_EQ(wrapped.field, "devices");
}

TEST(ApiClient, TransportFailureIsUnavailable) {
  // Port 1 on loopback: nothing listens there (connection refused).
  auto c = ApiClient::create("http://127.0.0.1:1", "", std::chrono::seconds(2));
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto r = (*c)->get("/v1/jobs");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_EQ(r.error().message.rfind("cannot reach http://127.0.0.1:1: ", 0), 0U) << r.error().message;
  EXPECT_TRUE((*c)->last_failure_was_transport());
}

TEST(ApiClient, CreateChecksUrl) {
  auto c = ApiClient::create("nope", "", std::chrono::seconds(1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::invalid_argument);
  if (!tls_supported()) {
    auto s = ApiClient::create("https://x", "", std::chrono::seconds(1));
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("TLS is not supported by this build"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessel::cli
