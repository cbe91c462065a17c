// Learning-rate schedule: linear warm-up to `peak` over `warmup` steps, then
// cosine decay to peak * min_ratio at `total` steps. Pure function.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace tessel::workers {

struct LrSchedule {
  double peak = 3e-3;
  int64_t warmup = 10;
  int64_t total = 100;
  double min_ratio = 0.1;

  // Learning rate for optimizer step `step` (0-based).
  double at(int64_t step) const {
    if (warmup > 0 && step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const int64_t span = std::max<int64_t>(1, total - warmup);
    const double progress = std::clamp(static_cast<double>(step - warmup) / static_cast<double>(span), 0.0, 1.0);
    const double floor = peak * min_ratio;
    return floor + (peak - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  }
};

}  // namespace tessel::workers
