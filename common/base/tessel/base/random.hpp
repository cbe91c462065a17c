#pragma once
// Secrets from the kernel's random source (getrandom(2)), for credentials.

#include <cstddef>
#include <string>

#include "tessel/base/result.hpp"

namespace tessel {

// `bytes` random bytes as 2*bytes lowercase hex digits; unavailable if the
// kernel's source fails (it blocks only before the pool is first seeded at boot).
Result<std::string> random_hex(size_t bytes);

}  // namespace tessel
