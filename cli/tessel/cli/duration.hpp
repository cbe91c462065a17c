#pragma once
// Durations as users type them on the command line, and ages as tables print them.

#include <cstdint>
#include <string>
#include <string_view>

#include "tessel/base/result.hpp"

namespace tessel::cli {

// Parses a duration into whole seconds. Accepted forms:
//   "90"                     seconds (note: Slurm reads a bare number as minutes; we do not)
//   "90s" "15m" "2h" "1d"    one unit
//   "1h30m" "1d2h3m4s"       several units, largest first, each at most once
//   "MM:SS" "HH:MM:SS"       colon forms as in Slurm; the first field may be any size,
//   "D-HH" "D-HH:MM" "D-HH:MM:SS"   later fields are 0..59 (hours after "D-": 0..23)
// Rejects empty input, signs, spaces, fractions, unknown units and values above
// kMaxDurationS with a message that quotes the input. Never throws.
Result<int64_t> parse_duration(std::string_view text);

inline constexpr int64_t kMaxDurationS = 100LL * 366 * 24 * 3600;  // About a century.

// A compact age for tables, like kubectl: "45s", "12m", "5h", "3d". Negative -> "0s".
std::string format_age(int64_t seconds);

// A duration for humans: "1h30m", "2d", "45s", "0s".
std::string format_duration(int64_t seconds);

}  // namespace tessel::cli
