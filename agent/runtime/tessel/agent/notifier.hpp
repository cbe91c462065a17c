#pragma once
// Telling the service manager how the agent is doing (sd_notify). The interface lets
// tests record messages; SystemdNotifier sends to $NOTIFY_SOCKET (no-op when unset).

#include <chrono>
#include <optional>
#include <string>

namespace tessel::agent {

class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual void ready() = 0;
  virtual void watchdog() = 0;
  virtual void status(const std::string& line) = 0;
  // Half of WATCHDOG_USEC when the watchdog is enabled for this process.
  virtual std::optional<std::chrono::microseconds> watchdog_period() = 0;
};

class SystemdNotifier final : public Notifier {
 public:
  void ready() override;
  void watchdog() override;
  void status(const std::string& line) override;
  std::optional<std::chrono::microseconds> watchdog_period() override;
};

}  // namespace tessel::agent
