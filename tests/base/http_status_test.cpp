#include "tessel/base/http_status.hpp"

#include <gtest/gtest.h>

namespace tessel {
namespace {

constexpr ErrorCode kAll[] = {ErrorCode::internal,           ErrorCode::invalid_argument,
                              ErrorCode::unauthenticated,    ErrorCode::permission_denied,
                              ErrorCode::not_found,          ErrorCode::conflict,
                              ErrorCode::payload_too_large,  ErrorCode::unavailable,
                              ErrorCode::method_not_allowed, ErrorCode::request_header_fields_too_large,
                              ErrorCode::resource_exhausted};

TEST(HttpStatus, EachCodeHasItsStatusAndBack) {
  EXPECT_EQ(http_status_of(ErrorCode::invalid_argument), 400);
  EXPECT_EQ(http_status_of(ErrorCode::unauthenticated), 401);
  EXPECT_EQ(http_status_of(ErrorCode::permission_denied), 403);
  EXPECT_EQ(http_status_of(ErrorCode::not_found), 404);
  EXPECT_EQ(http_status_of(ErrorCode::conflict), 409);
  EXPECT_EQ(http_status_of(ErrorCode::payload_too_large), 413);
  EXPECT_EQ(http_status_of(ErrorCode::unavailable), 503);
  EXPECT_EQ(http_status_of(ErrorCode::method_not_allowed), 405);
  EXPECT_EQ(http_status_of(ErrorCode::request_header_fields_too_large), 431);
  EXPECT_EQ(http_status_of(ErrorCode::resource_exhausted), 429);
  EXPECT_EQ(http_status_of(ErrorCode::internal), 500);
  for (ErrorCode c : kAll) {
    EXPECT_EQ(error_code_of_http_status(http_status_of(c)), c) << to_string(c);
    EXPECT_EQ(parse_error_code(to_string(c)), c) << to_string(c);
  }
}

TEST(HttpStatus, OtherStatusesAndNamesAreInternalOrUnknown) {
  for (int s : {0, 200, 302, 502, 504}) EXPECT_EQ(error_code_of_http_status(s), ErrorCode::internal) << s;
  EXPECT_FALSE(parse_error_code("NOT_FOUND"));
  EXPECT_FALSE(parse_error_code("method not allowed"));
  EXPECT_FALSE(parse_error_code(""));
}

TEST(HttpStatus, ALibrarysOwnStatusIsItsCodeOrTheRequestsFaultOrInternal) {
  for (ErrorCode c : kAll) EXPECT_EQ(error_code_of_library_status(http_status_of(c)), c) << to_string(c);
  for (int s : {414, 416, 417, 499}) EXPECT_EQ(error_code_of_library_status(s), ErrorCode::invalid_argument) << s;
  for (int s : {0, 200, 302, 500, 502, 504}) EXPECT_EQ(error_code_of_library_status(s), ErrorCode::internal) << s;
}

}  // namespace
}  // namespace tessel
