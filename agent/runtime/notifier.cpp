#include "tessel/agent/notifier.hpp"

#include <systemd/sd-daemon.h>

namespace tessel::agent {

void SystemdNotifier::ready() { sd_notify(0, "READY=1"); }
void SystemdNotifier::watchdog() { sd_notify(0, "WATCHDOG=1"); }
void SystemdNotifier::status(const std::string& line) { sd_notify(0, ("STATUS=" + line).c_str()); }

std::optional<std::chrono::microseconds> SystemdNotifier::watchdog_period() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec / 2);
}

}  // namespace tessel::agent
