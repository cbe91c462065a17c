#pragma once
// Internal to common/http: what server.cpp takes from routing.cpp.

#include <string>
#include <string_view>

#include "tessel/http/server.hpp"

namespace tessel::http {

// ASCII case-insensitive equality (header names and tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace tessel::http
