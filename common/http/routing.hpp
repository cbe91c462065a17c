#pragma once
// Internal to common/http: what server.cpp takes from routing.cpp.

#include <string>
#include <string_view>

#include "tessel/http/server.hpp"

namespace tessel::http {

// A JSON error body with an explicit status, for the server's own answers (404,
// 405, 413, 431, 503, ...) that no Error describes.
Response error_with_status(int status, const std::string& code, const std::string& message,
                           const std::string& field = "");
// ASCII case-insensitive equality (header names and tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace tessel::http
