#pragma once
// Exponential backoff with full jitter, capped: the n-th consecutive failure waits a
// uniformly random time in [base*2^n / 2, min(cap, base*2^n)]. reset() after a success.
// Randomness is injected (a seeded engine) so tests are deterministic. Not thread-safe.

#include <chrono>
#include <cstdint>
#include <random>

namespace tessel::agent {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, uint64_t seed)
      : base_(base), cap_(cap), rng_(seed) {}

  // The delay before the next attempt; each call counts one more failure.
  std::chrono::milliseconds next();
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds cap_;
  std::mt19937_64 rng_;
  int failures_ = 0;
};

}  // namespace tessel::agent
