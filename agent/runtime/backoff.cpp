#include "tessel/agent/backoff.hpp"

#include <algorithm>

namespace tessel::agent {

std::chrono::milliseconds Backoff::next() {
  const int shift = std::min(failures_, 30);
  ++failures_;
  int64_t ceiling = base_.count();
  for (int i = 0; i < shift && ceiling < cap_.count(); ++i) ceiling *= 2;
  ceiling = std::min<int64_t>(ceiling, cap_.count());
  std::uniform_int_distribution<int64_t> dist(ceiling / 2, std::max<int64_t>(ceiling, 1));
  return std::chrono::milliseconds(dist(rng_));
}

}  // namespace tessel::agent
