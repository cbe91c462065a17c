// testkit::eventually: polling with a deadline.
#include "eventually.hpp"

#include <algorithm>
#include <thread>

namespace tessel::testkit {

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds pause(1);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(pause);  // Polling interval, not a wait for an outcome.
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace tessel::testkit
