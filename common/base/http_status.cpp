#include "tessel/base/http_status.hpp"

#include <array>
#include <utility>

namespace tessel {

namespace {

constexpr std::array<std::pair<ErrorCode, int>, 11> kStatuses{{
    {ErrorCode::invalid_argument, 400},
    {ErrorCode::unauthenticated, 401},
    {ErrorCode::permission_denied, 403},
    {ErrorCode::not_found, 404},
    {ErrorCode::conflict, 409},
    {ErrorCode::payload_too_large, 413},
    {ErrorCode::unavailable, 503},
    {ErrorCode::method_not_allowed, 405},
    {ErrorCode::request_header_fields_too_large, 431},
    {ErrorCode::resource_exhausted, 429},
    {ErrorCode::internal, 500},
}};

}  // namespace

int http_status_of(ErrorCode code) {
  for (const auto& [c, status] : kStatuses)
    if (c == code) return status;
  return 500;
}

ErrorCode error_code_of_http_status(int status) {
  for (const auto& [code, s] : kStatuses)
    if (s == status) return code;
  return ErrorCode::internal;
}

ErrorCode error_code_of_library_status(int status) {
  const ErrorCode code = error_code_of_http_status(status);
  if (code == ErrorCode::internal && status >= 400 && status < 500) return ErrorCode::invalid_argument;
  return code;
}

std::optional<ErrorCode> parse_error_code(std::string_view name) {
  for (const auto& [code, status] : kStatuses)
    if (name == to_string(code)) return code;
  return std::nullopt;
}

}  // namespace tessel
