#include "tessel/base/host_port.hpp"

#include <charconv>

namespace tessel {

int parse_port(std::string_view text) {
  int port = -1;
  if (text.empty() || text.size() > 5) return -1;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, port);
  if (ec != std::errc() || p != end || port < 0 || port > 65535) return -1;
  return port;
}

Result<HostPort> parse_host_port(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Error::invalid(quoted + " is not [IPV6]:PORT");
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return Error::invalid(quoted + " is not HOST:PORT");
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) return Error::invalid(quoted + ": no host");
  out.port = parse_port(port_text);
  if (out.port < 0) return Error::invalid(quoted + ": port must be 0..65535");
  return out;
}

}  // namespace tessel
