#pragma once
// "HOST:PORT" as flags and URLs spell it: a name, an IPv4 address, or an IPv6
// address in brackets ("[::1]:7451").

#include <string>
#include <string_view>

#include "tessel/base/result.hpp"

namespace tessel {

struct HostPort {
  std::string host;  // IPv6 without brackets.
  int port = 0;
};

// Splits "host:port"; port 0 (bind any free port) is accepted. Errors are
// invalid_argument and quote the input.
Result<HostPort> parse_host_port(std::string_view text);

// A decimal port 0-65535, or -1 when `text` is not one.
int parse_port(std::string_view text);

}  // namespace tessel
