#include "tessel/scheduler/systemd_notifier.hpp"

#include <systemd/sd-daemon.h>

#include <chrono>
#include <string>

namespace tessel::scheduler {

void SystemdNotifier::start() {
  sd_notify(0, ("READY=1\nSTATUS=" + state_.status_line()).c_str());
  uint64_t usec = 0;
  const bool watchdog = sd_watchdog_enabled(0, &usec) > 0 && usec > 0;
  auto period = watchdog ? std::chrono::microseconds(usec / 2) : std::chrono::microseconds(5'000'000);
  if (period > std::chrono::seconds(5)) period = std::chrono::seconds(5);
  thread_ = std::thread([this, watchdog, period] {
    MutexLock lk(mu_);
    while (!stop_) {
      cv_.wait_for(mu_, period, [&]() REQUIRES(mu_) { return stop_; });
      if (stop_) break;
      lk.unlock();
      std::string msg = "STATUS=" + state_.status_line();
      if (watchdog) msg += "\nWATCHDOG=1";
      sd_notify(0, msg.c_str());
      lk.lock();
    }
  });
}

void SystemdNotifier::stop() {
  {
    MutexLock lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    sd_notify(0, "STOPPING=1");
  }
}

}  // namespace tessel::scheduler
