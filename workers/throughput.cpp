#include "throughput.h"

#include <algorithm>

namespace tessel::workers {

ThroughputMeter::ThroughputMeter(const Clock& clock)
    : clock_(clock), start_ns_(clock.steady_ns()), interval_start_ns_(start_ns_) {}

void ThroughputMeter::restart_interval() { interval_start_ns_ = clock_.steady_ns(); }

ThroughputLap ThroughputMeter::lap(double units) {
  const int64_t now = clock_.steady_ns();
  ThroughputLap out;
  out.elapsed_s = static_cast<double>(now - start_ns_) / 1e9;
  out.interval_s = std::max(1e-9, static_cast<double>(now - interval_start_ns_) / 1e9);
  out.per_s = units / out.interval_s;
  interval_start_ns_ = now;
  return out;
}

}  // namespace tessel::workers
