#include "tessel/base/log_safe.hpp"

namespace tessel {

std::string log_safe(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7f && c != '\\') {
      out += c;
      continue;
    }
    out += '\\';
    switch (c) {
      case '\n': out += 'n'; break;
      case '\r': out += 'r'; break;
      case '\t': out += 't'; break;
      case '\\': out += '\\'; break;
      default:
        out += 'x';
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
  }
  return out;
}

}  // namespace tessel
