#pragma once
// The agent's control loops, talking to the scheduler (agent_protocol.hpp):
//
//  * heartbeat loop (run()): reads the inventory, registers (with its task reports),
//    then heartbeats every interval with fresh inventory and reports; forgets tasks
//    the scheduler acknowledged; re-registers on 404; backs off with jitter while the
//    scheduler is unreachable. A heartbeat is sent early when kick() is called.
//  * long-poll loop (own thread): GET assignments?version=V&wait_s=N and applies each
//    desired state at once through TaskManager (starts / stops).
//  * watchdog (own thread, when systemd asks): WATCHDOG=1 every half period while the
//    heartbeat loop makes progress.
// READY=1 is sent once the inventory was read and the first registration succeeded.
// stop() may be called from any thread (e.g. a signal thread); run() then returns.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "tessel/agent/backoff.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/notifier.hpp"
#include "tessel/agent/scheduler_client.hpp"
#include "tessel/agent/task_manager.hpp"

namespace tessel::agent {

struct AgentConfig {
  std::string node;
  std::string address;
  std::string scheduler_url;  // For status lines.
  int agent_port = 0;
  std::optional<std::chrono::milliseconds> heartbeat_interval;  // Else the scheduler's.
  int long_poll_wait_s = 25;
  uint64_t seed = 0;  // Backoff jitter.
  std::chrono::milliseconds backoff_base{200};
  std::chrono::milliseconds backoff_cap{30000};
};

class Agent {
 public:
  // `heartbeat_api` and `poll_api` must be distinct objects (one per thread).
  Agent(AgentConfig cfg, SchedulerApi& heartbeat_api, SchedulerApi& poll_api, InventorySource& inventory,
        TaskManager& tasks, Notifier& notifier);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  void run();  // Blocks until stop().
  void stop();
  void kick();  // Send the next heartbeat now.

 private:
  bool wait_for(std::chrono::milliseconds d);  // False when stopping.
  void poll_loop();
  void watchdog_loop(std::chrono::microseconds period);
  bool heartbeat_once(const api::NodeInventory& inv);  // False: register again.
  void publish_status();

  AgentConfig cfg_;
  SchedulerApi& hb_api_;
  SchedulerApi& poll_api_;
  InventorySource& inventory_;
  TaskManager& tasks_;
  Notifier& notifier_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                       // Guarded by mu_.
  bool kicked_ = false;                         // Guarded by mu_.
  bool registered_ = false;                     // Guarded by mu_.
  std::optional<api::NodeInventory> last_inv_;  // Guarded by mu_.
  std::atomic<int64_t> progress_ns_{0};         // Last heartbeat-loop progress (steady clock).
};

}  // namespace tessel::agent
