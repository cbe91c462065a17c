#pragma once
// ModuleGroupAllocator: the pure placement core of the scheduler. Plain data in,
// plain data out: no clock (callers pass now_ms), no I/O, no threads. Not
// thread-safe; the scheduler service owns one instance behind its state mutex.
//
// Invariants it maintains (and tests check after every operation):
//  - no card is held by two jobs;
//  - every allocation is one valid group (Gaudi: by module id, see
//    api/topology.hpp; NVIDIA: any subset) on one node;
//  - a gang (nodes > 1) is placed on distinct nodes all at once or not at all;
//  - the blocked job at the head of the queue holds a reservation that
//    backfilled jobs cannot delay.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"
#include "tessel/base/result.hpp"
#include "tessel/scheduler/preemption.hpp"

namespace tessel::scheduler {

// A window for which a node is reserved (issue 32, part 4): [start_ms, end_ms).
struct ReservationWindow {
  std::string name;
  int64_t start_ms = 0, end_ms = 0;
  bool maintenance = false;  // No job at all runs on the node in the window.
  bool operator==(const ReservationWindow&) const = default;
};

struct NodeSpec {
  std::string name;
  api::Vendor vendor = api::Vendor::habana;
  // Devices by module id (NVIDIA: index). Unhealthy devices are never placed on,
  // but a job already holding one keeps it.
  struct Card {
    int module_id = 0;
    int index = 0;
    std::string model;
    bool healthy = true;
  };
  std::vector<Card> cards;
  bool schedulable = true;  // False when draining or down.
  // Non-empty: no multi-node gang is placed here, and this says why, for pending
  // reasons ("ports down on module 5"). Single-node jobs are unaffected.
  std::string gang_block;
  std::string driver_version;  // Matched against PendingJob::driver_version.
  // CPUs and memory the node offers tasks; 0: not reported (that dimension is not
  // counted on this node).
  int cpus = 0;
  int64_t memory_mib = 0;
  // Its labels, the agent's and the admins' (issue 32), matched against a job's node_selector.
  api::Labels labels;
  // Its reservations' windows (issue 32), in any order, not overlapping. During a window
  // only jobs of that reservation (constraints->reservation) run here (none for
  // maintenance); before one, only jobs whose time limit ends before it starts (jobs
  // without a time limit never start on a node with a window ahead). Jobs of a
  // reservation run only on its nodes, in its window. Ended windows count for nothing.
  std::vector<ReservationWindow> reservations;
};

struct PendingJob {
  std::string id;
  int devices = 0;  // Per node: 0 to 32 (a size no node's rule allows stays pending).
  int nodes = 1;
  int priority = 0;
  int64_t seq = 0;  // Submission order; lower is older.
  std::optional<int64_t> time_limit_s;
  std::optional<api::Vendor> vendor;
  std::string model;
  // Only nodes whose driver version matches (api::driver_version_matches); "" any.
  std::string driver_version;
  // CPUs and memory per node; 0: the node's share for the cards asked (node CPUs x
  // devices / node cards; likewise memory; see detail::need_on), nothing for a job without cards.
  int cpus = 0;
  int64_t memory_mib = 0;
  // Projects (all optional: the defaults order by priority and seq alone).
  int32_t project = -1;           // Index into schedule()'s `limits`; -1: no limits.
  bool preemptible = false;       // May borrow past its project's guarantee.
  bool within_guarantee = false;  // Its project is under its guarantee: ordered ahead at equal priority.
  double fair_share = 1.0;        // Its project's fair-share factor (higher first, after within_guarantee).
  double user_usage = 0.0;        // Its user's decayed usage (lower first, after fair_share).
  // Where it may run (issue 32: node_selector, nodelist, exclude, and a gang's
  // topology); null: anywhere, and placement does no work for it. Not owned: the job's spec, which outlives the call.
  const api::NodeConstraints* constraints = nullptr;
};

// One project's card limits during a pass (quotas). Counts are cards by model
// name, and under "*" for all models together. The pass adds what it places to
// `held`, so a project never passes `max`, and a non-preemptible job never takes
// its project past a positive `guaranteed` (borrowing needs a preemptible job).
struct ProjectLimits {
  std::string name;
  std::map<std::string, int64_t> held;
  std::map<std::string, int64_t> max;
  std::map<std::string, int64_t> guaranteed;
};

struct Placement {
  std::string job_id;
  std::vector<api::Allocation> allocations;  // One per node, ranks 0..nodes-1.
};

// Cards set aside for a blocked job during one schedule() pass. Jobs behind it may
// use these cards only when they have a time limit and end by `start_ms`.
struct Reservation {
  std::string job_id;
  // Earliest time the job can start (from the end_ms of the jobs now holding the
  // cards); nullopt when some card is held by a job without a time limit.
  std::optional<int64_t> start_ms;
  std::vector<api::Allocation> allocations;  // Ranks 0..nodes-1, like a Placement.
};

// Why the jobs a pass left pending wait: for each, a reason a person can act on, e.g.
// "waiting for 4 free cards in one valid group", "no node has 8 healthy HL-225",
// "unschedulable: cluster has 2 nodes", "reserved: waiting for job X's cards".
// A pass over 100,000 jobs gives most of them one of a few reasons: each text is kept
// once and each job holds its index, in a flat list (a hashed map of copies took a
// quarter of such a pass).
class PendingReasons {
 public:
  struct Entry {
    std::string job_id;
    uint32_t queue_index = 0;  // The job's index in the queue schedule() was given.
    uint32_t text = 0;         // Index into the texts: text(entry).
  };
  // `text`'s index, adding it when new.
  uint32_t intern(const std::string& text);
  void add(std::string job_id, uint32_t queue_index, uint32_t text) {
    entries_.push_back(Entry{std::move(job_id), queue_index, text});
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& text(const Entry& e) const { return texts_[e.text]; }
  size_t size() const { return entries_.size(); }
  // The reason of the job `id`, or null (placed, or not in the queue). Linear: for
  // tests and tools; a caller with the queue goes by Entry::queue_index.
  const std::string* find(std::string_view id) const;
  size_t count(std::string_view id) const { return find(id) ? 1 : 0; }
  void reserve(size_t jobs) { entries_.reserve(jobs); }

 private:
  std::vector<Entry> entries_;  // In the order the pass considered the jobs.
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> text_index_;
};

struct ScheduleResult {
  std::vector<Placement> placed;  // Already applied: their cards are held.
  // One entry for each job left pending (a later queue entry of an id already seen
  // has none: the first entry's outcome stands).
  PendingReasons pending_reasons;
  // At most one today: the first blocked job that could run once cards free up.
  // Informational; the cards are not held after schedule() returns.
  std::vector<Reservation> reservations;
  // Indices into the queue in the order the pass considered them (scheduling order).
  std::vector<uint32_t> order;
};

class ModuleGroupAllocator {
 public:
  ModuleGroupAllocator();
  ~ModuleGroupAllocator();
  ModuleGroupAllocator(const ModuleGroupAllocator&) = delete;
  ModuleGroupAllocator& operator=(const ModuleGroupAllocator&) = delete;

  // Adds or replaces a node's cards and schedulability. Holds on the node survive.
  void upsert_node(const NodeSpec& node);
  void set_schedulable(const std::string& node, bool schedulable);
  // The network's levels for topology-aware gangs (issue 32): label keys, narrowest
  // first ({"leaf", "spine"}); none by default. With levels, a gang that names no
  // topology prefers one block of each level in turn (api::Topology::preferred).
  void set_topology_levels(std::vector<std::string> levels);
  bool has_node(const std::string& node) const;

  // Marks cards (and each allocation's CPUs and memory) as held by a job (restoring
  // state from the database, or cards fenced on a down node). `end_ms` is when the job's time limit expires, if any.
  // Equivalent to try_hold() with the error ignored (see there).
  void hold(const std::string& job_id, const std::vector<api::Allocation>& allocations, std::optional<int64_t> end_ms);
  // As hold(), but all or nothing: fails (holding nothing new) when a card is held
  // by another job or a module id is outside 0..31. A node not yet known is created
  // unschedulable and without cards, so its holds survive until upsert_node().
  // Holding more cards for a job that already holds some adds to them; end_ms
  // replaces the job's previous end.
  Status try_hold(const std::string& job_id, const std::vector<api::Allocation>& allocations,
                  std::optional<int64_t> end_ms);
  // Frees every card the job holds (no-op when it holds none).
  void release(const std::string& job_id);
  // Frees the job's cards on one node only (the rest stay held).
  void release_on_node(const std::string& job_id, const std::string& node);

  // One pass over `queue` (any order; the allocator orders by priority desc, then
  // within_guarantee, fair_share desc, user_usage asc, then seq asc, then id).
  // With `limits`, a job whose placement would take its project past a limit stays
  // pending ("project vision at its max of 16 HL-225 cards"); `limits[i].held` then
  // includes what this pass placed. Jobs with an invalid size, duplicate ids and jobs that
  // already hold cards are left pending with a reason. Places what fits best (buddy best-fit, most-used node first),
  // gives the first blocked job a reservation, and backfills smaller jobs only
  // where they end (time_limit_s) before the reservation starts or do not touch
  // the reserved cards. Placed jobs' cards are held on return.
  ScheduleResult schedule(const std::vector<PendingJob>& queue, int64_t now_ms,
                          std::vector<ProjectLimits>* limits = nullptr);

  // Which running jobs to preempt so that `req.job` (within its project's
  // guarantee, left pending by schedule()) can start; the rules are in
  // tessel/scheduler/preemption.hpp. Changes nothing: the caller stops the victims.
  PreemptionOutcome plan_preemption(const PreemptionRequest& req) const;

  // Whether any schedulable node has a healthy card no job holds. When none has,
  // no pass can place anything until a card is freed or a node changes.
  bool any_free_card() const;

  // A node's CPUs and memory, and what jobs hold of them (zeros for an unknown node).
  struct Resources {
    int cpus = 0;
    int cpus_used = 0;
    int64_t memory_mib = 0;
    int64_t memory_used = 0;
  };
  Resources resources(const std::string& node) const;

  // Introspection for the API.
  // Job holding the card with `module_id` on `node`, or nullopt when free.
  std::optional<std::string> holder(const std::string& node, int module_id) const;
  // Free valid groups (module ids) on a node by size (Gaudi: 1, 2, 4, 8); NVIDIA nodes report
  // only singles and the count of free cards under size "all" is left to the caller.
  std::map<int, std::vector<api::Group>> free_groups(const std::string& node) const;
  // Every job holding cards, with its allocations (ascending module ids per node).
  std::map<std::string, std::vector<api::Allocation>> holdings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel::scheduler
