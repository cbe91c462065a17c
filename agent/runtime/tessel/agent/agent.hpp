#pragma once
// The agent's control loops, talking to the scheduler (agent_protocol.hpp):
//
//  * heartbeat loop (run()): reads the inventory, registers (with its task reports),
//    then heartbeats every interval with fresh inventory only (liveness and telemetry,
//    no reports); re-registers on 404; backs off with jitter while the scheduler is
//    unreachable. The inventory is read on a thread of its own (one read at a time),
//    waited for at most AgentConfig::inventory_wait: a slow or hung vendor tool
//    delays no heartbeat by more, and the heartbeat carries the last inventory until
//    the read ends (a failed read then marks the cards unhealthy, as before). Before each registration or heartbeat it
//    writes a small file in the state dir (TaskManager::probe_state_dir): while that fails, the node is reported
//    `degraded` with the reason, and the scheduler places nothing on it. The probe too runs on a thread of its own
//    (one at a time) and is waited for within the same inventory_wait: a stalled disk delays no heartbeat by more,
//    and while a probe has not ended the node is reported degraded ("a write has not ended after N ms").
//  * long-poll loop (own thread): GET assignments?version=V&wait_s=N and applies each
//    desired state at once through TaskManager (starts / stops); a changed answer
//    marks the reports dirty.
// Fencing (AgentConfig::epochs): an answer from an older leader epoch than one already
// seen is refused: a registration counts as failed, a desired state is not applied (the
// poll backs off and asks again), acknowledgements in it are not applied.
//  * task-event loop (own thread, when the events socket could be bound): receives the
//    supervisors' datagrams (task_events.hpp: ranks started, result written, or not
//    written and why) and marks the reports dirty.
//  * reporter (own thread): POST /v1/agent/report with every remembered task's report
//    as soon as they are dirty (so a task's end frees its cards at once, not at the next
//    heartbeat); after a failure it backs off (whatever changes meanwhile), then sends
//    the reports of that moment; forgets the tasks the scheduler acknowledges; on 404
//    has the heartbeat loop register again (also backed off). Every heartbeat interval
//    it also rereads the reports and sends them when they changed unannounced (a
//    supervisor that died without a word) or while a finished task awaits its ack
//    (periodic_report_due()).
//  * watchdog (own thread, when systemd asks): WATCHDOG=1 every half period while the
//    heartbeat loop makes progress.
// READY=1 is sent once the inventory was read and the first registration succeeded.
// stop() may be called from any thread (e.g. a signal thread); every loop ends promptly
// (HTTP calls in flight are cancelled) and run() then returns.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <functional>
#include <future>
#include <optional>
#include <string>

#include "tessel/time/clock.hpp"
#include "tessel/agent/backoff.hpp"
#include "tessel/agent/epoch_guard.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/notifier.hpp"
#include "tessel/agent/scheduler_client.hpp"
#include "tessel/agent/task_events.hpp"
#include "tessel/agent/task_manager.hpp"
#include "tessel/sync/mutex.hpp"

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
  // Where supervisors tell the agent about their tasks (events_socket_path(state dir)).
  // Empty, or when it cannot be bound: task changes are found by the reporter's check
  // every heartbeat interval only.
  std::string events_socket;
  // How long a heartbeat waits for the inventory read and the state-dir probe it
  // started (see above), both together.
  std::chrono::milliseconds inventory_wait{2000};
  // The state-dir probe: "" when the state dir takes writes, else why not. Null:
  // TaskManager::probe_state_dir() (tests give one that hangs).
  std::function<std::string()> probe_state_dir;
  // The agent's time (its watchdog's progress); null: the system clock.
  const Clock* clock = nullptr;
  // Called with RegisterResponse::scheduler_key after each registration (the log
  // server's credential); may be empty.
  std::function<void(const std::string&)> on_scheduler_key;
  // Fencing (epoch_guard.hpp): answers of an older leader epoch are refused. Null: no
  // fencing (every answer is acted on).
  EpochGuard* epochs = nullptr;
  // The node's labels (tessel-agent --label, issue 32): sent in every inventory.
  api::Labels labels;
};

class Agent {
 public:
  // Each SchedulerApi is used by one thread only: they must be distinct objects.
  // Binds cfg.events_socket (see AgentConfig).
  Agent(AgentConfig cfg, SchedulerApi& heartbeat_api, SchedulerApi& poll_api, SchedulerApi& report_api,
        InventorySource& inventory, TaskManager& tasks, Notifier& notifier);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  void run() EXCLUDES(mu_);  // Blocks until stop().
  void stop() EXCLUDES(mu_);
  // The task reports changed: the reporter sends them now. Any thread.
  void mark_reports_dirty() EXCLUDES(mu_);

 private:
  enum class ReportTrigger { stop, dirty, check };

  // Heartbeat loop (the thread that calls run()). Each step returns how long to wait.
  void heartbeat_loop() EXCLUDES(mu_);
  // Starts the inventory read and the state-dir probe, each unless one is in flight.
  void start_local_checks();
  // Both wait for their work at most until `deadline` (inventory_wait from the
  // loop's step): the last inventory, and the state dir's problem ("" none).
  std::optional<api::NodeInventory> refresh_inventory(std::chrono::steady_clock::time_point deadline) EXCLUDES(mu_);
  std::string probe_state_dir(std::chrono::steady_clock::time_point deadline);
  std::chrono::milliseconds register_once(const api::NodeInventory& inv, Backoff& backoff) EXCLUDES(mu_);
  std::chrono::milliseconds heartbeat_step(const api::NodeInventory& inv, Backoff& backoff) EXCLUDES(mu_);
  // True: the scheduler took it; false: it does not know this node (register again);
  // an Error: no answer, or another failure (back off).
  Result<bool> heartbeat_once(const api::NodeInventory& inv) EXCLUDES(mu_);
  bool wait_for(std::chrono::milliseconds d) EXCLUDES(mu_);  // False when stopping.
  void on_registered(std::chrono::milliseconds interval) EXCLUDES(mu_);
  void publish_status() EXCLUDES(mu_);
  // Whether an answer at `epoch` may be acted on (AgentConfig::epochs).
  bool admit(int64_t epoch, const char* what) const { return !cfg_.epochs || cfg_.epochs->admit(epoch, what); }
  // What the guard refused so far, for registrations and heartbeats.
  api::EpochRefusals refusals() const { return cfg_.epochs ? cfg_.epochs->refusals() : api::EpochRefusals{}; }

  void poll_loop() EXCLUDES(mu_);

  // Reporter and task events (agent_reporter.cpp).
  void event_loop() EXCLUDES(mu_);
  void report_loop() EXCLUDES(mu_);
  ReportTrigger wait_for_report_trigger() EXCLUDES(mu_);
  bool hold_off(std::chrono::milliseconds d) EXCLUDES(mu_);  // False when stopping.
  void registration_lost() EXCLUDES(mu_);

  void watchdog_loop(std::chrono::microseconds period) EXCLUDES(mu_);

  AgentConfig cfg_;
  SchedulerApi& hb_api_;
  SchedulerApi& poll_api_;
  SchedulerApi& report_api_;
  InventorySource& inventory_;
  TaskManager& tasks_;
  Notifier& notifier_;
  std::unique_ptr<TaskEventSocket> events_;  // Null when not bound. Set once, in the constructor.
  bool ready_sent_ = false;                  // Heartbeat loop only.
  std::string degraded_;                     // Heartbeat loop only: the last probe's finding.
  // Heartbeat loop only: the inventory the scheduler holds for this node and its tag
  // for it (from the last answer that took a whole one); while the cards keep that
  // shape, heartbeats carry their readings only. Empty: send the whole inventory.
  std::optional<std::pair<api::NodeInventory, int64_t>> held_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  // Heartbeat now: the reporter lost the registration, or a launch found the state
  // dir unwritable (the node is degraded from then on, not from the next interval).
  bool wake_heartbeat_ GUARDED_BY(mu_) = false;
  std::string degraded_sent_ GUARDED_BY(mu_);  // degraded_ as the heartbeat loop last sent it.
  bool registered_ GUARDED_BY(mu_) = false;
  bool reports_dirty_ GUARDED_BY(mu_) = false;
  std::chrono::milliseconds interval_ GUARDED_BY(mu_);  // The heartbeat interval.
  std::optional<api::NodeInventory> last_inv_ GUARDED_BY(mu_);
  const Clock& clock_;                   // cfg_.clock or the system clock.
  std::atomic<int64_t> progress_ns_{0};  // Last heartbeat-loop progress (clock_.steady_ns()).
  bool inventory_slow_ = false;          // Heartbeat loop only: the last wait ran out.
  bool probe_slow_ = false;              // Heartbeat loop only: the last probe wait ran out.
  // Heartbeat loop only: the inventory read and the state-dir probe in flight, if any.
  // Last, so that they are destroyed first: their destructors wait for them, and they
  // use inventory_ and tasks_.
  std::future<Result<api::NodeInventory>> inventory_read_;
  std::future<std::string> probe_;
};

}  // namespace tessel::agent
