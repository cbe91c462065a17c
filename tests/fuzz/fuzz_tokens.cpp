// libFuzzer: the scheduler's tokens file parser (a pure function over text).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessel/scheduler/tokens.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = tessel::scheduler::parse_tokens(std::string_view(reinterpret_cast<const char*>(data), size));
  if (t.ok()) {
    for (const auto& [token, p] : t->by_token)
      if (token.empty() || p.name.empty() || p.token != token) __builtin_trap();
  }
  return 0;
}
