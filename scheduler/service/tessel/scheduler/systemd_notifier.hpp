#pragma once
// SystemdNotifier: tells systemd READY=1 once the service listens, refreshes
// STATUS= (node/job counts) and sends WATCHDOG=1 at half of WATCHDOG_USEC when
// the unit enables the watchdog. A no-op outside systemd. Owns one thread.

#include <condition_variable>
#include <mutex>
#include <thread>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

class SystemdNotifier {
 public:
  explicit SystemdNotifier(const ClusterState& state) : state_(state) {}
  ~SystemdNotifier() { stop(); }
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  void start();
  void stop();  // Sends STOPPING=1 and joins.

 private:
  const ClusterState& state_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tessel::scheduler
