#pragma once
// ClusterState: the scheduler's in-memory view of jobs, nodes and card fences,
// kept equal to what the Store holds. Every change is computed, written to the
// store, and applied in memory only once the write succeeded, so a failed
// write changes nothing (API writes answer 503 "unavailable").
//
// Its data lives in tables and feature modules that own it behind narrow interfaces,
// each testable alone: JobTable (jobs, the pending and waiting queues), NodeTable
// (nodes, registrations being written, fences), ProjectTable, ActiveJobs, the
// allocator's model of the cards (placement), PreemptionClaims, LongPolls,
// PassPacing, NodeVersions, VersionWatch, the usage ledger and book, and the
// counters; ClusterState sequences them: compute a change, write it, apply it.
//
// Threading: one mutex (mu_) guards every member below it (annotated; checked by
// clang: tessel/sync/mutex.hpp). The HTTP layer, the scheduler thread
// (run_scheduler) and the liveness ticker call the public methods; all are
// thread-safe and take mu_ themselves (EXCLUDES); `*_locked` helpers, and the
// `apply` steps of a Txn, run with it held (REQUIRES). Submissions wait for their
// commit without holding mu_, so concurrent submissions share one group commit.
// A long poll is a Watch: a callback stored per node, answered when a change of
// the node's desired state bumps its version (so agents hear of a placement
// within milliseconds and a change wakes only the node it concerns), when the
// HTTP layer's timer expires it, or at shutdown. No thread waits for it.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/job_update.hpp"
#include "tessel/api/project.hpp"
#include "tessel/api/reservation.hpp"
#include "tessel/scheduler/accounting.hpp"
#include "tessel/scheduler/active_jobs.hpp"
#include "tessel/scheduler/allocator.hpp"
#include "tessel/scheduler/fair_share.hpp"
#include "tessel/scheduler/job_table.hpp"
#include "tessel/scheduler/long_polls.hpp"
#include "tessel/scheduler/api_error.hpp"
#include "tessel/scheduler/card_history.hpp"
#include "tessel/time/clock.hpp"
#include "tessel/scheduler/metrics.hpp"
#include "tessel/scheduler/node_table.hpp"
#include "tessel/scheduler/node_tokens.hpp"
#include "tessel/scheduler/node_versions.hpp"
#include "tessel/scheduler/pass_plan.hpp"
#include "tessel/scheduler/pass_pacing.hpp"
#include "tessel/scheduler/preemption_claims.hpp"
#include "tessel/scheduler/project_table.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/scheduler/tenant_limits.hpp"
#include "tessel/scheduler/version_skew.hpp"
#include "tessel/scheduler/tokens.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

// CPUs and memory per node for jobs that do not ask (JobSpec cpus / memory_mib 0).
struct TaskDefaults {
  int cpus_per_card = 0;            // 0: the node's share (node CPUs x cards asked / node cards).
  int64_t memory_mib_per_card = 0;  // 0: the node's share.
  int cpus_without_cards = 1;       // Jobs asking no cards.
  int64_t memory_mib_without_cards = 1024;
};

struct StateOptions {
  int64_t heartbeat_timeout_ms = 15'000;
  int master_port_lo = 29500;
  int master_port_hi = 29999;
  // Long polls held open at once; 0: no limit (a parked poll costs a callback, not
  // a thread). Past it a poll is answered at once with poll_after_ms, and the agent
  // polls again after about that long.
  int64_t max_long_polls = 0;
  int poll_after_ms = 2000;
  // Fair share: a card-second used this long ago counts half (--fairshare-half-life).
  int64_t fairshare_half_life_ms = int64_t{7} * 24 * 3600 * 1000;
  // Ended jobs are pruned this many days after they finished (--history-days); 0: kept forever.
  int64_t history_days = 90;
  // Preemption: a running job is never preempted before it ran this long (--preempt-min-runtime).
  int64_t preempt_min_runtime_ms = 60'000;
  // A victim with a warning signal (JobSpec `signal`) gets it this long at most before
  // its stop begins (--preempt-warning-max): min(its before_s, this).
  int64_t preempt_warning_max_ms = 60'000;
  // restore() logs its summary at debug, not info (a follower's view, restored often).
  bool quiet_restore = false;
  // Jobs not yet ended per user and in all, and array elements per submission.
  TenantLimits limits;
  TaskDefaults task_defaults;
  // Topology levels for gangs (--topology-key): label keys, narrowest first; none: off.
  std::vector<std::string> topology_levels;
};

struct JobFilter {
  std::optional<api::JobState> state;
  std::string user;  // Empty: any.
  int limit = 100;
  std::string after;  // Cursor: a job id; results are older than it.
  // A page ends early, with `next` set, once its jobs' JSON would pass about this
  // many bytes (at least one job is always returned), so a listing of big specs
  // holds megabytes, not gigabytes.
  size_t max_bytes = size_t{4} << 20;
};

struct JobPage {
  std::vector<api::Job> jobs;  // Newest first.
  std::string next;            // Empty when there are no more.
};

// Where rank N's log lives (for GET /v1/jobs/{id}/logs).
struct LogTarget {
  std::string address;
  int agent_port = 0;
  std::string assignment_id;
  int local_rank = 0;
  std::string scheduler_key;  // The scheduler's credential towards that agent; empty for old agents.
};

// A node as the API shows it (GET /v1/nodes).
struct NodeView {
  NodeRecord rec;
  std::string state;                                   // "ready", "degraded", "draining" or "down".
  std::string degraded;                                // Why its agent cannot start tasks; empty when it can.
  std::map<int, std::string> job_by_module;            // Module id -> the job holding the card.
  std::map<int, std::vector<api::Group>> free_groups;  // By size: valid groups free now.
  int cpus_used = 0;                                   // CPUs and memory (MiB) jobs hold on it.
  int64_t memory_used_mib = 0;
  std::vector<api::Reservation> reservations;  // Those naming it, not ended, by start (issue 32).
};

// Fleet totals (GET /v1/inventory).
struct InventoryView {
  struct Model {
    std::string model, vendor;
    int64_t cards = 0, healthy = 0, free = 0;
    std::map<int, int64_t> free_groups{{1, 0}, {2, 0}, {4, 0}, {8, 0}};  // Count of free valid groups by size.
    std::set<std::string> driver_versions, firmware_versions;            // As reported; "" left out.
    int64_t ports_down = 0;                                              // Cards with a NIC port down.
  };
  std::vector<Model> models;
  std::map<std::string, int64_t> nodes_by_state;
};

class ClusterState {
 public:
  // A job's reason while nodes pull its image: "pulling image REF on n1, n3".
  static constexpr char kPullingImageReason[] = "pulling image ";
  ClusterState(Store& store, const Clock& clock, StateOptions opts);
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Loads the store's snapshot: jobs, nodes (alive as of now) and fences;
  // restores the allocator's holds. Call once, before anything else.
  Status restore() EXCLUDES(mu_);

  // --- Jobs (REST) ---
  Result<api::Job> submit(api::JobSpec spec, const std::string& user) EXCLUDES(mu_);
  std::optional<api::Job> job(const std::string& id) const EXCLUDES(mu_);
  JobPage list_jobs(const JobFilter& f) const EXCLUDES(mu_);
  // Idempotent. Only admins or the job's owner may cancel.
  Result<api::Job> cancel(const std::string& id, const Principal& who) EXCLUDES(mu_);
  // Job control (state_control.cpp): the job's owner or an admin (403 otherwise), 404
  // for an unknown job, 409 for one in the wrong state; each writes an event naming who.
  // hold: keeps a pending job (an array: its pending elements) out of placement,
  // reservations and backfill until released; a held job stays held. release: queues
  // a held job (an array: its held elements) again; a user may release only what they
  // held themselves.
  Result<api::Job> hold(const std::string& id, const Principal& who) EXCLUDES(mu_);
  Result<api::Job> release(const std::string& id, const Principal& who) EXCLUDES(mu_);
  // Sends signal `name` (api::signal_number) to every rank of a running job (an array:
  // of its running elements), through the desired state of its nodes' agents.
  Result<api::Job> signal(const std::string& id, const std::string& name, const Principal& who) EXCLUDES(mu_);
  // PATCH: a pending (or held) job's priority, time limit, name or dependencies; a
  // user may only lower its priority and shorten its time limit (403 otherwise). The
  // queue reflects it at the next pass. Not an array's parent (409).
  Result<api::Job> update(const std::string& id, const api::JobUpdate& u, const Principal& who) EXCLUDES(mu_);
  // Stops an assigned or running job's tasks as a cancel does and puts it back in the
  // queue as a new attempt that counts neither as a failure nor against max_retries
  // (an array: its assigned and running elements).
  Result<api::Job> requeue(const std::string& id, const Principal& who) EXCLUDES(mu_);
  Result<LogTarget> log_target(const std::string& job_id, int rank) const EXCLUDES(mu_);
  // The job's state history, oldest first (state_events.cpp); nullopt for an unknown job.
  std::optional<std::vector<api::JobEvent>> job_events(const std::string& id) const EXCLUDES(mu_);

  // --- Projects (REST, state_projects.cpp) ---
  // Every project, by name; the built-in api::kDefaultProject (shares 1, no quotas)
  // is always there unless stored with other settings.
  std::vector<api::Project> projects() const EXCLUDES(mu_);
  Result<api::Project> project(const std::string& name) const EXCLUDES(mu_);
  // create: 409 when it exists. put: creates or replaces.
  Result<api::Project> create_project(const api::Project& p) EXCLUDES(mu_);
  Result<api::Project> put_project(const api::Project& p) EXCLUDES(mu_);
  // 409 while a job not yet ended belongs to it; the default project cannot be deleted.
  Result<api::Project> delete_project(const std::string& name) EXCLUDES(mu_);
  // Decayed usage (card-seconds, running jobs included) and fair-share factor by project.
  struct ProjectUsage {
    double usage = 0;
    double fair_share = 1;
  };
  std::map<std::string, ProjectUsage> project_usage() const EXCLUDES(mu_);
  // The scheduler's tenant limits, and how many jobs not yet ended a project has.
  const TenantLimits& limits() const { return opts_.limits; }
  int64_t active_jobs_in(const std::string& project) const EXCLUDES(mu_);

  // --- Reservations (REST, state_reservations.cpp; issue 32, part 4) ---
  // Every reservation, by name, ended ones too (until deleted).
  std::vector<api::Reservation> reservations() const EXCLUDES(mu_);
  Result<api::Reservation> reservation(const std::string& name) const EXCLUDES(mu_);
  // Stores a new reservation made by `who`: a count reservation gets that many
  // ready nodes matching its node_selector, not reserved in its window, at once.
  // 400 naming the field: an unknown node (nodes[i]), a node reserved by another
  // reservation for an overlapping window (nodes), too few matching nodes (count), an
  // end already past (end); 409 when the name exists.
  Result<api::Reservation> create_reservation(api::Reservation r, const std::string& who) EXCLUDES(mu_);
  // Its nodes take other jobs again from the next pass; jobs of it stay pending.
  Result<api::Reservation> delete_reservation(const std::string& name) EXCLUDES(mu_);
  // A submission naming a reservation: 400 naming `reservation` when it does not exist
  // or has ended, 403 when `user` (not an admin) is neither one of its users nor
  // submitting to one of its projects, or it is a maintenance reservation.
  Status check_reservation_use(const api::JobSpec& spec, const std::string& user, bool admin) const EXCLUDES(mu_);

  // --- Accounting and history (state_history.cpp) ---
  // Card-seconds of ended attempts in a window (accounting.hpp); never takes mu_.
  std::vector<UsageRow> usage(const UsageQuery& q) const { return book_.report(q); }
  // Deletes, from memory and the store in one write, up to `max_jobs` ended jobs that
  // finished more than history_days ago; their usage records stay. A job that a job
  // not yet ended depends on, or whose cards are still fenced, is kept. Returns how
  // many it deleted (0 with history_days 0); call again while it returns max_jobs.
  Result<size_t> prune_history(size_t max_jobs) EXCLUDES(mu_);

  // --- Nodes (REST) ---
  std::vector<NodeView> nodes() const EXCLUDES(mu_);
  Result<NodeView> node(const std::string& name) const EXCLUDES(mu_);
  Result<NodeView> set_drained(const std::string& name, bool drained) EXCLUDES(mu_);
  // Changes the labels admins set on a node (issue 32; api::LabelChange): stored, and
  // placed by from the next pass. 404 for an unknown node, 400 past api::kMaxLabels.
  Result<NodeView> set_node_labels(const std::string& name, const api::LabelChange& change) EXCLUDES(mu_);
  // Forgets a node that holds no cards (conflict otherwise); returns its last view.
  // An agent still running on it registers it again with its next heartbeat.
  Result<NodeView> remove_node(const std::string& name) EXCLUDES(mu_);
  InventoryView inventory() const EXCLUDES(mu_);
  // The last hour of the node's card readings (GET /v1/nodes/{name}/history).
  Result<std::vector<CardHistory::Card>> card_history(const std::string& name) const EXCLUDES(mu_);
  int64_t card_history_resolution_ms() const { return card_history_.resolution_ms(); }
  StatsSnapshot stats() const EXCLUDES(mu_);
  // False while the last write to the store failed (disk full, read-only, I/O error).
  bool storage_ok() const { return storage_ok_.load(); }
  // Change counters, for the console's event stream (GET /v1/events): each rises
  // once a committed change of its kind is applied. `jobs`: a job was submitted,
  // changed state or got a new pending reason; `nodes`: a node was added, removed,
  // drained, went down or back, or its cards were placed or freed; `metrics`: a
  // heartbeat brought new card readings. Lock-free: a reader compares them with
  // what it saw last.
  struct ChangeCounts {
    uint64_t jobs = 0, nodes = 0, metrics = 0;
    bool operator==(const ChangeCounts&) const = default;
  };
  ChangeCounts change_counts() const { return {jobs_changes_.load(), nodes_changes_.load(), metrics_changes_.load()}; }
  std::string status_line() const EXCLUDES(mu_);  // For systemd STATUS=.

  // Admin-issued agent tokens (restored with the rest; own lock, never mu_).
  NodeTokens& node_tokens() { return node_tokens_; }
  const NodeTokens& node_tokens() const { return node_tokens_; }

  // --- Agent protocol ---
  Result<api::RegisterResponse> register_node(const api::RegisterRequest& req, const std::string& token) EXCLUDES(mu_);
  Result<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req, const std::string& token) EXCLUDES(mu_);
  // The heartbeat of nearly every call: a node that is up and sends new telemetry
  // only. Handled in place, moving the inventory out of `req`, when the state lock is
  // free at once; nullopt when it is busy or the heartbeat needs a commit (then call
  // heartbeat()). Never waits: the HTTP server calls it on an I/O thread.
  std::optional<api::HeartbeatResponse> heartbeat_in_place(api::HeartbeatRequest& req, const std::string& token)
      EXCLUDES(mu_);
  // Task reports (sent the moment a task starts or ends): frees the cards of
  // ended jobs and wakes the scheduling pass before it returns.
  Result<api::ReportResponse> report(const api::ReportRequest& req, const std::string& token) EXCLUDES(mu_);

  // Long poll. `done` is called exactly once: at once (from this call) when the
  // node's version differs from `version` or max_long_polls are already waiting
  // (then with poll_after_ms set); else when the version changes, when
  // expire_watch(node, id) is called, or at shutdown. `done` runs with mu_ held:
  // it must only hand the answer on, never call back into ClusterState.
  // Returns the watch id, 0 when `done` already ran (or an error: unknown node).
  // `done` gets an error instead of a state when the node's credential was revoked
  // or the node deleted while the poll waited (end_polls_locked).
  using WatchDone = LongPolls::Done;
  Result<uint64_t> watch_desired(const std::string& node, int64_t version, WatchDone done) EXCLUDES(mu_);
  // Answers watch `id` with the current (unchanged) state if it still waits.
  void expire_watch(const std::string& node, uint64_t id) EXCLUDES(mu_);
  // After NodeTokens::revoke(): when `node` registered with the token whose SHA-256 is
  // `token_sha256`, nothing is placed there any more (the node shows as degraded
  // until its agent comes back with a valid token) and its parked polls end at once
  // with 401. A node that uses another token is left as it is.
  void token_revoked(const std::string& node, const std::string& token_sha256) EXCLUDES(mu_);

  // --- Background work ---
  // One scheduling pass over the pending queue (the scheduler thread calls it;
  // tests may call it directly).
  void schedule_pass() EXCLUDES(mu_);
  // Runs schedule_pass whenever something changed, coalescing bursts, until shutdown().
  void run_scheduler() EXCLUDES(mu_);
  // Marks nodes whose heartbeats stopped for the timeout as down and requeues or fails their jobs.
  void check_liveness() EXCLUDES(mu_);
  // Answers every long poll and stops the scheduler thread.
  void shutdown() EXCLUDES(mu_);

 private:
  // Writes a batch under mu_, then runs `apply` steps if it succeeded.
  struct Txn {
    WriteBatch batch;
    std::vector<std::function<void()>> apply;
  };
  bool commit_locked(Txn& txn, const char* what) REQUIRES(mu_);
  // As commit_locked, but waits for the store without holding mu_: the batch is queued
  // under mu_ (stores commit in mu_'s order), so concurrent callers share a group
  // commit instead of taking turns. Only for a change nothing can invalidate while mu_
  // is released: the caller fences it off (NodeTable::begin_registration), and `apply` steps read the
  // state as it is when they run.
  bool commit_queued(Txn& txn, const char* what) REQUIRES(mu_);
  // commit_locked's steps before the write (arrays, dependents, usage, events) and after it.
  void complete_locked(Txn& txn) REQUIRES(mu_);
  void applied_locked(Txn& txn) REQUIRES(mu_);
  // Every store write goes through here: keeps storage_ok_ and the failure count.
  Status write_store(const WriteBatch& batch);
  Status note_store_result(Status s);

  std::string node_state_locked(const NodeEntry& n) const REQUIRES(mu_);
  // A job (or fence) holding cards on `node`, if any.
  std::optional<std::string> card_holder_on_locked(const std::string& node) const REQUIRES(mu_);
  static bool schedulable(const NodeEntry& n) { return !n.rec.drained && !n.down && n.degraded.empty(); }
  // What every heartbeat sets on its node (not the inventory: copied or moved).
  static void take_heartbeat(NodeEntry& e, const api::HeartbeatRequest& req, const std::string& token, int64_t now_ms);
  // A heartbeat that changes nothing stored and nothing placement sees: a node that is
  // up sends new telemetry (same cards, same health) and no task list.
  static bool telemetry_only(const NodeEntry& cur, const api::HeartbeatRequest& req);
  // The rest of such a heartbeat once its telemetry is in `cur`: in place, no transaction.
  api::HeartbeatResponse take_telemetry_locked(NodeEntry& cur, const api::HeartbeatRequest& req,
                                               const std::string& token) REQUIRES(mu_);
  // Gives `e` a whole inventory and a new tag for it.
  void take_inventory_locked(NodeEntry& e, api::NodeInventory inventory) REQUIRES(mu_);
  NodeSpec node_spec_locked(const NodeEntry& n) const REQUIRES(mu_);
  // After `node`'s inventory changed (or the node went): VersionWatch::note.
  void note_version_skew_locked(const std::string& node) REQUIRES(mu_);
  void bump_locked(const std::string& node) REQUIRES(mu_);
  // Asks for a scheduling pass. `capacity`: the change may let a pending job fit
  // (cards freed, a node added or changed); false for a new submission only.
  void mark_dirty_locked(bool capacity = true) REQUIRES(mu_);
  std::vector<api::Assignment> assignments_locked(const std::string& node) const REQUIRES(mu_);
  NodeView node_view_locked(const NodeEntry& n) const REQUIRES(mu_);

  api::Job make_job(int64_t seq, api::JobSpec spec, const std::string& user) const;
  // Job control (state_control.cpp). The key of job `id` if `who` may control it (404, 403).
  Result<int64_t> controlled_job_locked(const std::string& id, const Principal& who) const REQUIRES(mu_);
  // Add to `txn` holding (releasing) the pending (held) job at `key`, by user `by`.
  void hold_locked(Txn& txn, int64_t key, const std::string& by) REQUIRES(mu_);
  void release_locked(Txn& txn, int64_t key, const std::string& by) REQUIRES(mu_);
  // `why`: the event's reason ("" : "SIG<name> to every rank").
  void signal_locked(Txn& txn, int64_t key, const std::string& name, const std::string& by, const std::string& why = "")
      REQUIRES(mu_);
  // 409, 403 or 400 when `who` may not make update `u` to job `j`.
  Status check_update_locked(const api::Job& j, const api::JobUpdate& u, const Principal& who) const REQUIRES(mu_);
  // Ends pending job `e` (queued or waiting for its dependencies) as cancelled.
  void cancel_pending_locked(Txn& txn, const JobEntry& e, const std::string& reason) REQUIRES(mu_);
  // Stops job `e`'s current attempt early: fences the ranks not known gone,
  // then requeues (attempt+1) when `retry` and retries remain, else ends it in
  // `final_state` with `reason`/`exit_code`. With `preempted_by` (a job id) it
  // always requeues, uses no retry, counts a preemption and gives that reason.
  // With `requeued_by` (a user) it always requeues, uses no retry and counts a requeue.
  void stop_job_locked(Txn& txn, const JobEntry& e, api::JobState final_state, const std::string& reason,
                       std::optional<int> exit_code, bool retry, const std::string& preempted_by = "",
                       const std::string& requeued_by = "") REQUIRES(mu_);
  void process_reports_locked(Txn& txn, const std::string& node, const std::vector<api::TaskReport>& tasks,
                              std::vector<std::string>& acknowledged) REQUIRES(mu_);
  // Applies the reports' verdict to the job; true when this ends the attempt.
  bool evaluate_job_locked(Txn& txn, const JobEntry& e) REQUIRES(mu_);
  void log_change(const api::Job& job, const std::string& what) const;
  // A job as the API shows it: with its queue position and estimated start.
  static api::Job view_of(const JobEntry& e);

  // State history (state_events.cpp): an event for each change of state or attempt
  // that `txn` writes, added to the records it writes and, once applied, to memory;
  // and a "pulling_image" event when a job's reason becomes a new
  // kPullingImageReason one (a node started pulling its image).
  void record_events_locked(Txn& txn) REQUIRES(mu_);
  static api::JobEvent submitted_event(const api::Job& job);

  // Projects (state_projects.cpp).
  // Fills in the default project; 400 naming `project` when it does not exist.
  Status resolve_project_locked(api::JobSpec& spec) const REQUIRES(mu_);
  // The nodes of the spec's nodelist and exclude are known (400 naming the entry otherwise).
  Status check_node_names_locked(const api::JobSpec& spec) const REQUIRES(mu_);
  // Tenant limits (tenant_limits.hpp): whether `n` more jobs of `user` with `spec`
  // (project resolved) fit; if so, counts them at once, before their write, so
  // submissions waiting for the store together cannot pass a limit. The caller
  // takes them back (uncount_locked) when the write fails or the jobs end at birth.
  Status admit_locked(const api::JobSpec& spec, const std::string& user, int64_t n) REQUIRES(mu_);
  void uncount_locked(const api::JobSpec& spec, const std::string& user, int64_t n) REQUIRES(mu_);
  // Before a committed batch is applied: the counts of jobs it ends (or brings back).
  void count_changes_locked(const WriteBatch& batch) REQUIRES(mu_);
  Result<api::Project> write_project_locked(const api::Project& p) REQUIRES(mu_);
  // Reservations (state_reservations.cpp): the windows of the reservations naming `node`
  // (placement's NodeSpec), and the reservations themselves not ended at `now`.
  std::vector<ReservationWindow> reservation_windows_locked(const std::string& node) const REQUIRES(mu_);
  std::vector<api::Reservation> node_reservations_locked(const std::string& node, int64_t now) const REQUIRES(mu_);
  // Hands the placement the current windows of `nodes` (after a reservation changed).
  void refresh_reserved_nodes_locked(const std::vector<std::string>& nodes) REQUIRES(mu_);
  // The scheduling pass's view of projects: limits (quotas) and fair-share
  // factors, and each queued job's project index and order fields.
  struct PassPolicy {
    // Looked up once per queued job: hashed, as the queue may be 100,000 long.
    std::vector<ProjectLimits> limits;  // Empty when no project has a quota.
    std::unordered_map<std::string, int32_t> index;
    std::unordered_map<std::string, double> fair_share;
    std::unordered_map<std::string, double> user_usage;
  };
  PassPolicy pass_policy_locked(int64_t now) const REQUIRES(mu_);
  void apply_policy(const PassPolicy& policy, const api::Job& job, PendingJob& out) const;
  // Usage by project and by user at `now`, running jobs included.
  UsageLedger usage_now_locked(int64_t now) const REQUIRES(mu_);
  // Cards of `allocations` by model (and "*") as the nodes' inventories say.
  std::map<std::string, int64_t> cards_by_model_locked(const std::vector<api::Allocation>& allocations) const
      REQUIRES(mu_);
  // Adds to `txn` a usage record for each attempt it ends (a job leaving assigned/running).
  void record_usage_locked(Txn& txn) REQUIRES(mu_);
  UsageRecord usage_record_locked(const api::Job& attempt, int64_t end_ms) const REQUIRES(mu_);
  // What the current attempt's tasks measured, from their reports (the tasks that had
  // ended when asked): CPU seconds summed, peak memory the largest.
  static void measured_use(const JobEntry& e, std::optional<double>& cpu_seconds, std::optional<int64_t>& max_rss_mib);
  // Once committed: the batch's usage records into the fair-share ledger and the book.
  void account_usage_locked(const WriteBatch& batch) REQUIRES(mu_);
  // Restore: writes the records that jobs ended before accounting existed lack.
  Status backfill_usage_locked() REQUIRES(mu_);
  // Per-project gauges of /metrics.
  void project_stats_locked(StatsSnapshot& s) const REQUIRES(mu_);

  // Job dependencies (state_deps.cpp). A pending job with a dependency not yet met
  // waits in the waiting queue (JobTable), out of the scheduling pass's sight; one that can never be met
  // is cancelled. Evaluated at submission and restore, and in commit_locked() for
  // every change that ends a job, within that change's Txn.
  struct DepCheck {
    enum class Verdict { ready, waiting, never } verdict = Verdict::ready;
    std::string reason;  // "waiting for j-...", or why it can never start.
  };
  // `changing`: the states a Txn being built gives jobs; they win over jobs_.
  DepCheck check_dependencies_locked(const api::JobSpec& spec,
                                     const std::map<std::string, api::JobState>& changing = {}) const REQUIRES(mu_);
  // 400 naming the field for a dependency on an unknown job or on `self`.
  Status validate_dependencies_locked(const api::JobSpec& spec, const std::string& self) const REQUIRES(mu_);
  // Submitting (state_submit.cpp), one path for every job: a submission checked and
  // admitted, its records ready to be written (the job; or an array's parent, then its
  // elements in index order).
  struct Submission {
    int64_t key = 0;  // The job's (or the parent's) key.
    std::vector<api::Job> jobs;
    std::vector<int> indices;  // An array's element indices; empty for a plain job.
    DepCheck check;            // Its dependencies' verdict, the same for every element.
    int64_t count = 1;         // Jobs it counts against the user's limits.
  };
  Result<Submission> prepare_submission_locked(api::JobSpec spec, const std::string& user) REQUIRES(mu_);
  // Files the written records in memory (moving them out of `sub`) and queues what may run.
  void file_submission_locked(Submission& sub) REQUIRES(mu_);
  // Files a pending job that can start now in the pending queue, a waiting one in the waiting queue.
  void enqueue_locked(int64_t seq, JobEntry& entry, const DepCheck& check) REQUIRES(mu_);
  // Restore: queues the pending jobs; cancels those whose dependencies can never be met.
  Status enqueue_restored_locked() REQUIRES(mu_);
  // Adds to `txn` what the jobs it ends mean for waiting jobs: cancellations
  // (cascading to their own dependents), new reasons, moves to the pending queue.
  void resolve_dependents_locked(Txn& txn) REQUIRES(mu_);
  void release_waiting_locked(int64_t seq) REQUIRES(mu_);

  // Job arrays (state_arrays.cpp). The parent is a stored job that is never queued;
  // its state follows its elements' (array_state()). Its elements are jobs of
  // their own, keyed right after it (job_key()). Whatever changes an element goes
  // through commit_locked(), which, in the same Txn, writes the parent when its
  // state changes and keeps the parent's counts (JobTable's ArrayCounts).
  // What a Txn being built does to an array: its counts, and where in the batch
  // the parent's new record is (npos: not written).
  struct ArrayChange {
    std::array<int, 6> states{};
    size_t batch_index = std::string::npos;
  };
  // Cancels every element of the array at `key` not yet ended.
  void cancel_array_locked(Txn& txn, int64_t key, const std::string& reason) REQUIRES(mu_);
  // Adds to `txn` what its changes mean for arrays and dependents, until nothing more follows.
  void settle_locked(Txn& txn) REQUIRES(mu_);
  void update_arrays_locked(Txn& txn, size_t from, std::map<int64_t, ArrayChange>& changes) REQUIRES(mu_);
  // Restore: the array parents' counts from the restored jobs.
  void restore_arrays_locked() REQUIRES(mu_);
  // A job as the API shows it; a parent with its elements' counts, an element with
  // the spec it shares with its parent (api::Job::spec_shared) whole again.
  api::Job view_locked(int64_t key, const JobEntry& e) const REQUIRES(mu_);
  // The job's whole spec: an element's own, with its parent's command, env and workdir.
  api::JobSpec whole_spec_locked(int64_t key, const api::Job& j) const REQUIRES(mu_);
  // The scheduling pass's parallel limit: walking the pending queue in key order (an array's
  // elements are adjacent), whether element `e` may be offered to the allocator.
  // If not, sets its reason ("array j-... at its parallel limit of P").
  struct ArrayGate {
    int64_t parent = -1;
    int slots = 0;
    std::string reason;
    bool reasons_changed = false;
  };
  bool array_gate_locked(int64_t key, JobEntry& e, ArrayGate& gate) REQUIRES(mu_);

  // Preemption (state_preempt.cpp). A pending job within its project's guarantee
  // that the pass could not place stops the victims the pure policy picks
  // (ModuleGroupAllocator::plan_preemption) and waits for their cards, which are
  // held for it (under "preempt:<job>") as their tasks end; once all are, it is
  // placed on them before anything else. The claim (cards and victims) is stored in
  // the job's record (api::Job::preempt_claim), so a restarted scheduler resumes it.
  // Drops preemptions whose job is no longer pending or whose nodes cannot take it
  // (their jobs, the claim cleared, go to `dropped`, for the pass to write), holds
  // their cards as they free up, and returns (holding the cards for the job) those
  // whose cards are all free. Adds their cards to the projects' held counts.
  std::vector<Placement> advance_preemptions_locked(PassPolicy& policy, int64_t now, std::vector<api::Job>& dropped)
      REQUIRES(mu_);
  // At restore, after the queues: the pending jobs whose records hold a claim.
  void restore_preemptions_locked() REQUIRES(mu_);
  // Commits the pass's preemption, if any (PassPlan::preemption): stops its victims in
  // `txn` (or warns those with a warning signal, stopped later) and files the claim.
  void commit_preemption_locked(Txn& txn, const PassPlan& pass, const std::vector<JobEntry*>& entries, int64_t now)
      REQUIRES(mu_);
  // Stops the warned victims whose warning lead is over (check_liveness()); returns
  // the keys of the jobs it stopped.
  std::set<int64_t> stop_warned_victims_locked(Txn& txn, int64_t now) REQUIRES(mu_);
  // Whether a job of `project` may preempt (the project guarantees cards).
  bool may_preempt_locked(const std::string& project) const REQUIRES(mu_);

  // The scheduling pass's steps (state_sched.cpp): the view (the queue of jobs that may
  // be offered, in key order, each with its entry), the plan (plan_pass(),
  // pass_plan.hpp), and its commit.
  void pass_queue_locked(const PassPolicy& policy, std::vector<PendingJob>& queue, std::vector<JobEntry*>& entries,
                         ArrayGate& gate) REQUIRES(mu_);
  // The input plan_pass() reads the nodes through: their addresses and the master
  // ports of the jobs with rank 0 there.
  PassInput pass_input_locked(const std::vector<PendingJob>& queue, PassPolicy& policy, int64_t now) REQUIRES(mu_);
  // Shows where the plan leaves the pending jobs, then writes its placements, the
  // claims the pass dropped and a preemption in one batch, and applies them once
  // written (the placed cards are released when the write fails).
  void commit_pass_locked(const PassPlan& plan, const std::vector<JobEntry*>& entries,
                          std::vector<api::Job> claims_dropped, int64_t now) REQUIRES(mu_);
  // Adds to `txn` the job placed by `p` as assigned, with its master endpoint, and its apply step.
  void add_placement_locked(Txn& txn, const Placement& p, const MasterEndpoint& master, int64_t now) REQUIRES(mu_);
  // Gives the jobs the pass left pending their reasons (in memory: shown, not stored);
  // true when any changed.
  bool take_pending_reasons_locked(const ScheduleResult& res, const std::vector<PendingJob>& queue,
                                   const std::vector<JobEntry*>& entries) REQUIRES(mu_);

  Store& store_;
  const Clock& clock_;
  const StateOptions opts_;
  CardHistory card_history_;  // Its own lock: heartbeats record, the console reads.
  NodeTokens node_tokens_{[this](const WriteBatch& b) { return write_store(b); }, clock_};

  mutable Mutex mu_;
  LongPolls polls_ GUARDED_BY(mu_);  // Parked long polls by node.
  void answer_watches_locked(const std::string& node) REQUIRES(mu_);
  // Ends the node's parked polls with `why` instead of a state.
  void end_polls_locked(const std::string& node, const Error& why) REQUIRES(mu_);
  CondVar dirty_cv_;
  PassPacing pacing_ GUARDED_BY(mu_);  // Whether a pass is due, or skipped (cluster full).
  bool stopping_ GUARDED_BY(mu_) = false;
  NodeVersions versions_of_nodes_ GUARDED_BY(mu_);  // Desired-state versions, inventory tags.
  // Every job by key, with the pending and waiting queues; hands out sequence numbers.
  JobTable jobs_ GUARDED_BY(mu_);
  ActiveJobs active_ GUARDED_BY(mu_);      // Assigned and running jobs, by sequence and by node.
  NodeTable nodes_ GUARDED_BY(mu_);        // Nodes by name, registrations being written, fences.
  VersionWatch versions_ GUARDED_BY(mu_);  // Driver and firmware versions by model.
  ProjectTable projects_ GUARDED_BY(mu_);
  std::map<std::string, api::Reservation> reservations_ GUARDED_BY(mu_);  // By name (issue 32).
  ActiveJobCounts active_counts_ GUARDED_BY(mu_);  // Jobs not yet ended (and being submitted), by user.
  UsageLedger usage_ GUARDED_BY(mu_);              // Ended attempts; running ones are added per pass.
  UsageBook book_;  // Accounting: every ended attempt's usage record. Its own mutex, taken after mu_.
  ModuleGroupAllocator alloc_ GUARDED_BY(mu_);
  PreemptionClaims preempting_ GUARDED_BY(mu_);  // By the preempting job's sequence.
  std::atomic<bool> storage_ok_{true};
  std::atomic<uint64_t> jobs_changes_{0}, nodes_changes_{0}, metrics_changes_{0};
  std::atomic<uint64_t> store_write_failures_total_{0};
  SchedulerCounters counters_ GUARDED_BY(mu_);  // For /metrics.
};

}  // namespace tessel::scheduler
