// libFuzzer target for the CLI's duration parser (outside input: command-line flags).
// Checks: never crashes, accepted values are within 0..kMaxDurationS, and
// format_duration's output of an accepted value parses back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tessel/cli/duration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = tessel::cli::parse_duration(text);
  if (!r) return 0;
  if (*r < 0 || *r > tessel::cli::kMaxDurationS) std::abort();
  auto again = tessel::cli::parse_duration(tessel::cli::format_duration(*r));
  if (!again || *again != *r) std::abort();
  (void)tessel::cli::format_age(*r);
  return 0;
}
