#pragma once
// SystemdNotifier: tells systemd READY=1 once the service listens, refreshes
// STATUS= (node/job counts) and sends WATCHDOG=1 at half of WATCHDOG_USEC when
// the unit enables the watchdog. A no-op outside systemd. Owns one thread.

#include <thread>

#include "tessel/scheduler/state.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

class SystemdNotifier {
 public:
  explicit SystemdNotifier(const ClusterState& state) : state_(state) {}
  ~SystemdNotifier() { stop(); }
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  void start() EXCLUDES(mu_);
  void stop() EXCLUDES(mu_);  // Sends STOPPING=1 and joins.

 private:
  const ClusterState& state_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tessel::scheduler
