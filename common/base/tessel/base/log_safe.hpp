#pragma once
// Text from outside (a job's reason, an agent's address, a client's header) on
// its way into a log line: control bytes become visible escapes, so no input
// can forge a line, move the cursor or ring a terminal. And the one check that
// text from outside is plain printable ASCII (vendor tools' fields).

#include <string>
#include <string_view>

namespace tessel {

// `text` with every byte below 0x20, 0x7f and '\\' written as \n, \r, \t, \\ or
// \xNN; everything else (UTF-8 included) is kept as it is.
std::string log_safe(std::string_view text);

// Whether every byte of `text` is printable ASCII (0x20 space to 0x7e '~'); true
// for "".
inline bool printable_ascii(std::string_view text) {
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b > 0x7e) return false;
  }
  return true;
}

}  // namespace tessel
