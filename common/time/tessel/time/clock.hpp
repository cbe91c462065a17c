#pragma once
// Clock: the only source of time of the scheduler and the agent, passed in rather
// than read from the system, so tests control it and never sleep. Wall-clock
// timestamps (jobs, heartbeat ages, task starts) and monotonic durations (metrics,
// the agent's watchdog) read it; tests drive a FakeClock. Thread-safe:
// implementations may be read from any thread. Waits for a duration (a heartbeat
// interval, a backoff) still use the condition variables' real time.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tessel {

class Clock {
 public:
  virtual ~Clock() = default;
  // Unix epoch milliseconds (wall clock): job timestamps, heartbeat ages.
  virtual int64_t now_ms() const = 0;
  // Monotonic nanoseconds: durations measured for metrics.
  virtual int64_t steady_ns() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
  int64_t steady_ns() const override {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
  }
};

// The process's SystemClock, for the programs' main() and for defaults.
inline const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

// A clock that moves only when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'800'000'000'000) : ms_(start_ms) {}
  int64_t now_ms() const override { return ms_.load(); }
  int64_t steady_ns() const override { return ms_.load() * 1'000'000; }
  void advance_ms(int64_t d) { ms_ += d; }

 private:
  std::atomic<int64_t> ms_;
};

}  // namespace tessel
