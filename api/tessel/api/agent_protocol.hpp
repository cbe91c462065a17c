#pragma once
// The agent <-> scheduler protocol (role `agent`). Desired-state reconciliation:
//
//   POST /v1/agent/register   RegisterRequest  -> RegisterResponse
//   POST /v1/agent/heartbeat  HeartbeatRequest -> HeartbeatResponse
//        Liveness and telemetry, and whether the node can start tasks (`degraded`).
//        (404 {"error":{"code":"not_found"}} when the scheduler does not know the
//        node, e.g. after losing it: the agent registers again)
//        The telemetry is the whole inventory, or only the cards' readings on top of
//        the inventory the scheduler holds: each answer that took a whole inventory
//        (RegisterResponse, HeartbeatResponse) names it with `inventory_tag`, an
//        opaque number new with every inventory the scheduler takes and in every
//        scheduler process. While its cards keep their shape (same cards, fields and
//        health: api::same_but_readings), the agent sends `readings` and that tag;
//        409 {"error":{"code":"conflict","field":"inventory_tag"}} when the scheduler
//        holds no inventory of that tag (it restarted, or a new leader took over):
//        the agent sends the whole inventory next. After any other failed heartbeat,
//        and to schedulers that answer no tag (older ones), it sends it whole too.
//   POST /v1/agent/report     ReportRequest -> ReportResponse
//        Task reports, sent the moment a task starts, ends or is killed (the
//        supervisor tells the agent at once): the scheduler commits them, frees
//        the cards of ended jobs and wakes its scheduling pass before it answers
//        (the pass runs at once on the scheduler thread). Same 404 as a heartbeat.
//   GET  /v1/agent/nodes/{node}/assignments?version=V&wait_s=S -> DesiredState
//        Long poll: answers at once when the scheduler's version for the node
//        differs from V, else when it changes, else after S seconds (max 60).
//        A scheduler holding as many polls as it allows answers at once with
//        poll_after_ms (and Connection: close): the agent polls again after that.
//
// DesiredState lists every assignment the node should be running now. The
// agent starts each assignment id it has never started (it records started ids
// durably, so nothing is launched twice), and kills (SIGTERM, then SIGKILL after
// kill_grace_s) any running task whose assignment is no longer listed: that is
// how cancel and fencing work. A listed assignment's `signals` that are new to the
// agent are delivered to its running task's ranks (users' signals). Reports carry
// every assignment the agent still remembers; the scheduler frees cards only when a
// report says the assignment's processes are gone (or it was never started).
//
// Fencing: every answer (RegisterResponse, HeartbeatResponse, ReportResponse,
// DesiredState) carries `epoch`, the leader lease's epoch of the scheduler that gave
// it (replicas on PostgreSQL: 1, 2, ...; a scheduler without replicas: 0, absent on
// the wire). The agent keeps the highest epoch it has seen, durably, and acts on no
// answer of an older one: a paused old leader can neither start nor kill tasks, nor
// make the agent forget reports the new leader has not stored. Each registration and
// heartbeat carries `epoch_refusals`, what the agent has refused so far, so the
// current leader shows (and logs) that an old one is still answering agents.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/signals.hpp"

namespace tessel::api {

struct Assignment {
  std::string id;  // "<job_id>.<attempt>.<rank>": unique, applied once.
  std::string job_id;
  int attempt = 0;
  int node_rank = 0;
  int nnodes = 1;
  std::vector<int> module_ids;  // Ascending.
  std::vector<int> indices;     // Matching indices, same order.
  std::string master_addr;
  int master_port = 0;
  JobSpec spec;
  // Times the job was preempted before this attempt; the agent sets
  // TESSEL_PREEMPTED=1 when > 0. Absent on the wire when 0.
  int preemptions = 0;
  // The task's CPUs and memory on this node, resolved by the scheduler: the agent
  // fences the task to that many CPUs (a cpuset) and that much memory (a hard limit).
  // 0 (absent on the wire): not set, no such limit.
  int cpus = 0;
  int64_t memory_mib = 0;
  // Signals users sent the attempt's ranks (POST /v1/jobs/{id}/signal), the latest
  // api::kMaxJobSignals: the agent delivers to every rank of its running task each
  // one whose id is above the last it delivered. Absent on the wire when none.
  std::vector<JobSignal> signals;

  bool operator==(const Assignment&) const = default;
};
nlohmann::json to_json(const Assignment& a);
Result<Assignment> assignment_from_json(const nlohmann::json& j);
std::string assignment_id(const std::string& job_id, int attempt, int rank);

enum class TaskState {
  running,  // At least one process of the assignment is alive.
  exited,   // All processes ended; exit_code/signal set.
  failed_to_start,
};
std::string to_string(TaskState s);

struct TaskReport {
  std::string assignment_id;
  TaskState state = TaskState::running;
  // First non-zero exit of its processes, else 0. Absent (with no signal) for an
  // exited task whose result could not be recorded: the scheduler counts it failed.
  std::optional<int> exit_code;
  std::optional<int> signal;  // Set when a process was killed by a signal.
  std::string message;        // E.g. "exec: No such file or directory".
  int port = 0;               // TESSEL_PORT of local rank 0, when known.
  // The task's use, read from its cgroup when it ended (absent on the wire while
  // running, and when the node does not isolate tasks): CPU seconds of all its
  // processes, and its peak memory.
  std::optional<double> cpu_seconds;
  std::optional<int64_t> max_rss_mib;
  // Local ranks whose output passed the node's per-rank log cap: what came after was
  // dropped (a marker line says so in the log). Absent on the wire when none.
  std::vector<int> logs_capped;
  // What a running task is doing before its ranks start: kTaskPhasePullingImage while its
  // supervisor pulls the job's image. Empty (absent on the wire) otherwise. At most
  // kMaxTaskPhaseBytes of [a-z_]; the scheduler ignores a phase it does not know.
  std::string phase;
};
inline constexpr int kMaxLocalRanks = 4096;
inline constexpr char kTaskPhasePullingImage[] = "pulling_image";
inline constexpr size_t kMaxTaskPhaseBytes = 32;

nlohmann::json to_json(const TaskReport& r);
Result<TaskReport> task_report_from_json(const nlohmann::json& j);

// Answers the agent refused for their old epoch since it started (absent on the wire
// while `total` is 0).
struct EpochRefusals {
  uint64_t total = 0;
  int64_t last_epoch = 0;  // The epoch of the latest refused answer.
  int64_t highest = 0;     // The highest epoch the agent had seen at that refusal.
  bool operator==(const EpochRefusals&) const = default;
};

struct RegisterRequest {
  std::string node;
  std::string address;  // Host name or IP other nodes and users reach it by.
  int agent_port = 0;   // The agent's HTTP port (logs), 0 when none.
  NodeInventory inventory;
  std::vector<TaskReport> tasks;
  std::string degraded;  // As in HeartbeatRequest.
  EpochRefusals epoch_refusals;
};
struct RegisterResponse {
  int heartbeat_interval_s = 5;
  // The scheduler's credential towards this agent (64 hex digits, new at every
  // registration): the agent's log server accepts requests bearing it and no
  // other token, so neither a user's nor a node's token reads logs from an agent.
  // Empty from schedulers that predate it.
  std::string scheduler_key;
  int64_t epoch = 0;  // See "Fencing" above.
  // The scheduler's tag of the registration's inventory (see the heartbeat above);
  // 0, absent on the wire, from schedulers that take no readings.
  int64_t inventory_tag = 0;
};

// A heartbeat's readings: the cards of the inventory the scheduler holds as
// `inventory_tag`, in its order.
struct HeartbeatReadings {
  int64_t inventory_tag = 0;
  std::vector<DeviceReading> devices;
  bool operator==(const HeartbeatReadings&) const = default;
};

struct HeartbeatRequest {
  std::string node;
  // Fresh telemetry and health: the whole inventory, unless `readings` is set (then
  // `inventory` is empty and absent on the wire).
  NodeInventory inventory;
  // Absent on the wire (nullopt): no reports, which is what current agents send (they
  // report through POST /v1/agent/report). Present: handled like a ReportRequest's
  // (agents before the report endpoint sent them here).
  std::optional<std::vector<TaskReport>> tasks;
  // Why the node cannot start tasks now ("agent state dir: No space left on device"),
  // or empty (absent on the wire) when it can. The scheduler places nothing on a
  // degraded node; the agent checks again before every heartbeat.
  std::string degraded;
  EpochRefusals epoch_refusals;
  std::optional<HeartbeatReadings> readings;
};
inline constexpr size_t kMaxDegradedBytes = 1024;
struct HeartbeatResponse {
  // Assignment ids whose final report the scheduler has stored: the agent may forget them.
  std::vector<std::string> acknowledged;
  int64_t epoch = 0;  // See "Fencing" above.
  // The tag of the inventory the scheduler now holds for the node (see above); 0,
  // absent on the wire, from schedulers that take no readings.
  int64_t inventory_tag = 0;
};

// Every assignment the agent still remembers (running ones too: a fence on the
// node ends only when a report shows its processes gone, or leaves it out).
struct ReportRequest {
  std::string node;
  std::vector<TaskReport> tasks;
};
struct ReportResponse {
  // Assignment ids whose final report the scheduler has stored: the agent may forget them.
  std::vector<std::string> acknowledged;
  int64_t epoch = 0;  // See "Fencing" above.
};

struct DesiredState {
  int64_t version = 0;
  std::vector<Assignment> assignments;
  // > 0 when the scheduler answered at once because it holds as many long polls as
  // it allows: poll again after about this long instead of at once. Absent on the wire when 0.
  int poll_after_ms = 0;
  int64_t epoch = 0;  // See "Fencing" above.
};
inline constexpr int kMaxPollAfterMs = 600'000;

nlohmann::json to_json(const RegisterRequest& r);
Result<RegisterRequest> register_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RegisterResponse& r);
Result<RegisterResponse> register_response_from_json(const nlohmann::json& j);
nlohmann::json to_json(const HeartbeatRequest& r);
Result<HeartbeatRequest> heartbeat_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const HeartbeatResponse& r);
Result<HeartbeatResponse> heartbeat_response_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ReportRequest& r);
Result<ReportRequest> report_request_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ReportResponse& r);
Result<ReportResponse> report_response_from_json(const nlohmann::json& j);
nlohmann::json to_json(const DesiredState& d);
Result<DesiredState> desired_state_from_json(const nlohmann::json& j);

}  // namespace tessel::api
