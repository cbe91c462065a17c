#pragma once
// The one mapping between ErrorCode and HTTP status, both ways: servers answer an
// Error with http_status_of(), clients turn an answer back into an Error's code.

#include <optional>
#include <string_view>

#include "tessel/base/result.hpp"

namespace tessel {

// invalid_argument 400, unauthenticated 401, permission_denied 403, not_found 404,
// conflict 409, payload_too_large 413, resource_exhausted 429, unavailable 503,
// method_not_allowed 405, request_header_fields_too_large 431, internal 500.
int http_status_of(ErrorCode code);

// The inverse for those statuses; any other status is internal.
ErrorCode error_code_of_http_status(int status);

// For a status an HTTP library chose on its own (it answered before any handler ran,
// e.g. 414 or 416): the inverse above, else invalid_argument for any other 4xx (the
// request was at fault), else internal.
ErrorCode error_code_of_library_status(int status);

// The code whose to_string() is `name` ("not_found"), if any.
std::optional<ErrorCode> parse_error_code(std::string_view name);

}  // namespace tessel
