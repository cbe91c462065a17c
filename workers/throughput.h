// ThroughputMeter: elapsed time and rates (tokens/s) of a run, measured on an
// injected tessel::Clock (its monotonic steady_ns()) rather than read from the
// system, so tests drive a FakeClock and assert the figures. Used by
// tessel-train's progress lines and tessel-infer's per-completion elapsed_s.
// No LibTorch here. Not thread-safe: one thread uses a meter.
#pragma once

#include <cstdint>

#include "tessel/time/clock.hpp"

namespace tessel::workers {

struct ThroughputLap {
  double elapsed_s = 0;   // since the meter was made
  double interval_s = 0;  // since the previous lap (or restart_interval()); at least 1 ns
  double per_s = 0;       // the lap's units / interval_s
};

class ThroughputMeter {
 public:
  // Elapsed time, and the first interval, count from now. `clock` must
  // outlive the meter.
  explicit ThroughputMeter(const Clock& clock);

  // The next interval counts from now (e.g. once set-up is done).
  void restart_interval();

  // Closes the interval that began at the previous lap (or restart), in which
  // `units` (tokens, ...) were done, and begins the next one.
  ThroughputLap lap(double units);

 private:
  const Clock& clock_;
  int64_t start_ns_;
  int64_t interval_start_ns_;
};

}  // namespace tessel::workers
