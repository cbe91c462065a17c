#pragma once
// Small helpers the files of SchedulePass share (schedule_pass.cpp, schedule_reasons.cpp,
// schedule_reserve.cpp, schedule_topology.cpp).

#include <cstdint>
#include <limits>

namespace tessel::scheduler::detail::pass {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// `now_ms` plus `seconds` (negative: 0), kNever where that overflows.
inline int64_t add_seconds(int64_t now_ms, int64_t seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds > (kNever - now_ms) / 1000) return kNever;
  return now_ms + seconds * 1000;
}

// The node of a fit-index entry ((fit class << 32) | node).
inline uint32_t node_of(uint64_t entry) { return static_cast<uint32_t>(entry & 0xFFFFFFFFu); }

}  // namespace tessel::scheduler::detail::pass
