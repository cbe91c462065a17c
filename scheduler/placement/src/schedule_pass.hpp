#pragma once
// SchedulePass: one ModuleGroupAllocator::schedule() call. Walks the queue in
// priority order, places what fits (buddy best-fit, most used node first), gives
// the first job that waits for busy cards a reservation, and lets later jobs use
// reserved cards only when they surely end before the reservation starts.
//
// Reserved cards are marked `blocked` in the ClusterState for the lifetime of the
// pass, so the ordinary index already excludes them; the destructor unblocks them.
// Failures are cached per (vendor, model, devices, may-use-reserved): cards are
// only consumed during a pass, so a size that failed keeps failing.

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cluster_state.hpp"
#include "node_filter.hpp"
#include "schedule_order.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {

// The fields that order the queue, copied: higher priority, then within its project's
// guarantee, higher fair-share factor, lower user usage, older submission.
// compare() < 0 when `this` runs first, 0 on a tie (then the id decides).
struct SortKey {
  int priority;
  bool within_guarantee;
  double fair_share;
  double user_usage;
  int64_t seq;
  uint32_t index;
  int compare(const SortKey& o) const {
    if (priority != o.priority) return priority > o.priority ? -1 : 1;
    if (within_guarantee != o.within_guarantee) return within_guarantee ? -1 : 1;
    if (fair_share != o.fair_share) return fair_share > o.fair_share ? -1 : 1;
    if (user_usage != o.user_usage) return user_usage < o.user_usage ? -1 : 1;
    if (seq != o.seq) return seq < o.seq ? -1 : 1;
    return 0;
  }
};

// One slot of a HashSlots table.
struct HashSlot {
  static constexpr uint32_t kEmpty = std::numeric_limits<uint32_t>::max();
  size_t hash = 0;
  uint32_t index = kEmpty;
};

// A set of indices keyed by precomputed hashes, in one flat array (open addressing,
// linear probing) that the caller keeps. With 100,000 pending jobs a
// std::unordered_set of their ids was most of a pass's cache misses: a node allocated
// per id, and freed again.
class HashSlots {
 public:
  // Clears `slots` and sizes it for `entries`.
  HashSlots(std::vector<HashSlot>& slots, size_t entries) : slots_(slots) {
    size_t capacity = 16;
    while (capacity < entries + entries / 2) capacity <<= 1;
    slots_.assign(capacity, HashSlot{});
    mask_ = capacity - 1;
  }
  // Stores `index` under `hash`, unless an index stored under the same hash is the
  // same entry (same(stored) is true): then returns that one and stores nothing.
  template <class Same>
  std::optional<uint32_t> insert(size_t hash, uint32_t index, const Same& same) {
    for (size_t s = hash & mask_;; s = (s + 1) & mask_) {
      HashSlot& slot = slots_[s];
      if (slot.index == HashSlot::kEmpty) {
        slot = HashSlot{hash, index};
        return std::nullopt;
      }
      if (slot.hash == hash && same(slot.index)) return slot.index;
    }
  }
  // Starts fetching the slot where a probe for `hash` begins.
  void prefetch(size_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  bool has_hash(size_t hash) const {
    for (size_t s = hash & mask_;; s = (s + 1) & mask_) {
      if (slots_[s].index == HashSlot::kEmpty) return false;
      if (slots_[s].hash == hash) return true;
    }
  }

 private:
  std::vector<HashSlot>& slots_;
  size_t mask_ = 0;
};

// Scratch memory a pass needs in proportion to the queue, kept by the allocator
// between passes. Allocated afresh each pass, glibc handed megabytes back to the
// kernel and faulted them in again: at 100,000 jobs that doubled a pass (bench_pass).
struct PassBuffers {
  std::vector<SortKey> keys;
  std::vector<size_t> id_hash;
  std::vector<bool> repeated;
  std::vector<HashSlot> id_slots;
  std::vector<HashSlot> held_slots;
  OrderBuffers order;
};

class SchedulePass {
 public:
  SchedulePass(ClusterState& state, PassBuffers& buffers, int64_t now_ms, std::vector<ProjectLimits>* limits = nullptr);
  ~SchedulePass();
  SchedulePass(const SchedulePass&) = delete;
  SchedulePass& operator=(const SchedulePass&) = delete;

  ScheduleResult run(const std::vector<PendingJob>& queue);

 private:
  struct Choice {
    uint32_t node = 0;
    Mask group = 0;  // 0 for jobs without cards.
    Need need;
  };
  using Plan = std::vector<Choice>;
  struct Reserved {
    std::string job_id;
    std::optional<int64_t> start_ms;
    std::vector<uint32_t> nodes;  // Ascending.
  };

  // The queue's indexes in scheduling order (priority, guarantee, fair share, user
  // usage, sequence, id); also fills buffers_.id_hash and buffers_.repeated (whether
  // an id occurs more than once) for run().
  std::vector<uint32_t> scheduling_order(const std::vector<PendingJob>& queue);
  // The (vendor, model) keys the job may use, found once per vendor and model a pass.
  const std::vector<int>& keys_of(const PendingJob& job);
  // Whether the job may run on the node at all (node_filter.hpp: its driver version,
  // for gangs the node's gang_block, its node constraints). filtered(): whether some
  // node may fail that.
  // The constraints' part is one bit of the job's admitted set (admitted_now_); then its
  // reservation (node_filter.hpp: reservation_ok).
  bool eligible(const Node& node, const PendingJob& job) const {
    return (job.nodes == 1 || node.gang_block.empty()) &&
           api::driver_version_matches(job.driver_version, node.driver_version) &&
           (job.constraints == nullptr || admitted_now_->bit[static_cast<size_t>(&node - state_.nodes.data())]) &&
           reservation_ok(node, job);
  }
  // The nodes that pass a job's node constraints (detail::admits), found once a pass for
  // each content of constraints and node count: one bit per node, and the list. A
  // selector's nodes come from the label index, not a walk over every node.
  struct Admitted {
    std::vector<bool> bit;
    std::vector<uint32_t> nodes;  // Ascending.
  };
  const Admitted& admitted(const api::NodeConstraints* same, int nodes);
  static bool filtered(const PendingJob& job) {
    return job.nodes > 1 || !job.driver_version.empty() || job.constraints != nullptr;
  }
  // For a job with node constraints: why too few ready nodes pass them ("no ready node
  // with rack=r9", "node n3 of the nodelist is not ready"), or "".
  std::string constraint_reason(const PendingJob& job, const std::vector<int>& keys) const;
  // Reservations (issue 32): for a job of a reservation whose nodes it may not use yet
  // (or any more), why ("waiting for reservation demo to start at ..."); for another job,
  // a node that would take it now but for a reservation ("node n1 is reserved for demo
  // until ..."); else "".
  std::string reservation_reason(const PendingJob& job, const std::vector<int>& keys) const;
  // The job's choice on node `n` of key `k` with its best group free there (with
  // `honour_blocked`, leaving reserved cards alone), keyed as the fit index is; nullopt
  // when the node cannot take it now.
  // For a filtered job whose capacity the filters take away: the reason, naming
  // up to three excluded nodes; "" when the filters exclude no capable node.
  std::string filtered_reason(const PendingJob& job, const std::vector<int>& keys) const;
  // What `job` takes on `node` (detail::need_on).
  static Need need_on(const Node& node, const PendingJob& job) {
    return detail::need_on(node, job.devices, job.cpus, job.memory_mib);
  }
  // Whether the node has `need` free now (`honour_blocked`: leaving what the pass
  // reserved alone), or at all when empty.
  static bool fits(const Node& node, const Need& need, bool honour_blocked);
  static bool ever_fits(const Node& node, const Need& need);
  // Whether the job asks CPUs or memory of its own (else only shares, which every node has).
  static bool asks_resources(const PendingJob& job) { return job.cpus > 0 || job.memory_mib > 0; }
  // When the node has `need` free, at `not_before` or later, as the jobs holding its
  // CPUs and memory end (kNever when a holder has no time limit); for reserve().
  int64_t resources_free_at(uint32_t n, const Need& need, int64_t not_before);
  // For a job asking CPUs or memory: the reason when too few nodes could ever give
  // them (with a card group of its size), or "".
  std::string never_fits_resources(const PendingJob& job, const std::vector<int>& keys);
  // For a job that fits no node now although enough could hold it: the first node with
  // the cards but short of CPUs or memory, as "n1: 6 of 8 CPUs in use, job needs 4"; "".
  std::string short_of_resources(const PendingJob& job, const std::vector<int>& keys) const;
  std::optional<std::pair<uint64_t, Choice>> choice_on(const PendingJob& job, uint32_t n, int k,
                                                       bool honour_blocked) const;
  // A nodelist shorter than the job's nodes (lists_some()): its nodes' choices for key
  // `k` into `plan` and `taken`; false when one of them cannot take the job now.
  bool take_listed(const PendingJob& job, int k, bool use_reserved, Plan& plan, std::vector<uint32_t>& taken) const;
  std::optional<Plan> plan_without_cards(const PendingJob& job, const std::vector<int>& keys) const;
  // `use_reserved`: may also take reserved cards (only after unreserved ones).
  std::optional<Plan> plan_cards(const PendingJob& job, const std::vector<int>& keys, bool use_reserved) const;
  // A gang's plan within one block of label `level` (detail::topology_plan): of the
  // blocks whose usable nodes can hold it, the one that leaves the fewest over, then the
  // smallest; nullopt when none can.
  std::optional<Plan> plan_in_block(const PendingJob& job, const std::vector<int>& keys, bool use_reserved,
                                    std::string_view level) const;
  // plan_cards()'s gangs: by topology when the job or the scheduler asks for it.
  std::optional<Plan> plan_gang(const PendingJob& job, const std::vector<int>& keys, bool use_reserved) const;
  std::optional<Plan> plan_gang_anywhere(const PendingJob& job, const std::vector<int>& keys, bool use_reserved) const;
  // For a gang with a required topology that does not fit now: why, naming the largest
  // block; sets *waiting when some block could hold it once cards free up.
  std::string topology_reason(const PendingJob& job, const std::vector<int>& keys, bool* waiting) const;
  bool may_use_reserved(const PendingJob& job) const;
  // Sets *waiting when capacity exists and only busy cards stand in the way.
  std::string reason_for(const PendingJob& job, const std::vector<int>& keys, bool* waiting);
  void reserve(const PendingJob& job, const std::vector<int>& keys, ScheduleResult& out);
  // A pending job of a reservation whose window has not opened yet starts at the
  // window's start at the earliest: that is its estimated start (as Slurm shows a
  // reservation job's StartTime), reported in `out` like a reservation's.
  void estimate_window(const PendingJob& job, ScheduleResult& out);
  // Blocks `groups` (node, cards; in rank order) for the job from `start` (kNever:
  // unknown) for the rest of the pass, and reports the reservation in `out`.
  void hold_reservation(const PendingJob& job, const std::vector<std::pair<uint32_t, Mask>>& groups, int64_t start,
                        ScheduleResult& out);
  int64_t card_free_at(const Node& node, int slot) const;
  Placement apply(const PendingJob& job, const Plan& plan);
  api::Allocation allocation(const Choice& c, int rank) const;
  // Quotas: the cards `plan` takes, by model and under "*"; and the reason the job
  // may not take `cards` (nullopt when within its project's limits).
  std::map<std::string, int64_t> cards_by_model(const Plan& plan) const;
  std::optional<std::string> over_limit(const PendingJob& job, const std::map<std::string, int64_t>& cards) const;
  // The same for `n` more cards of one model (or "*"); allocates nothing when within limits.
  std::optional<std::string> over_limit(const PendingJob& job, const std::string& model, int64_t n) const;
  // Before placing, what is known: the model the job asks for, and "*" (limited jobs with cards).
  std::optional<std::string> over_limit_asked(const PendingJob& job) const;

  ClusterState& state_;
  PassBuffers& buffers_;
  int64_t now_ms_;
  std::vector<ProjectLimits>* limits_;
  std::optional<Reserved> reserved_;
  // The previous pass's reservation (ClusterState::last_reservation), for reserve().
  std::optional<ClusterState::LastReservation> previous_;
  // The keys below view strings of run()'s queue, which outlives the pass: with 100,000
  // pending jobs, copying them into every lookup's key was a large share of a pass.
  // (vendor or -1, devices, may use reserved, cpus, memory, constraints, model, driver
  // version) -> fewest nodes that failed.
  // The constraints are the pass's one object of their content (same_constraints()),
  // so the keys compare them as pointers.
  // The whole numbers and the constraints first: most keys differ there, and a compare
  // of the strings (a call each) then runs only between keys equal in all of them.
  using FailKey =
      std::tuple<int, int, bool, int, int64_t, const api::NodeConstraints*, std::string_view, std::string_view>;
  // The job's key there, viewing its strings.
  // `same`: same_constraints(job.constraints).
  static FailKey fail_key_of(const PendingJob& job, bool use_reserved, const api::NodeConstraints* same) {
    return {job.vendor ? static_cast<int>(*job.vendor) : -1,
            job.devices,
            use_reserved,
            job.cpus,
            job.memory_mib,
            same,
            job.model,
            job.driver_version};
  }
  std::map<FailKey, int> failed_;
  // (the same, nodes) -> pending reason (its index in the result's texts), for jobs that failed.
  std::map<
      std::tuple<int, int, bool, int, int64_t, const api::NodeConstraints*, std::string_view, std::string_view, int>,
      uint32_t>
      reason_cache_;
  // The first constraints of each content this pass met, by the constraints of each job
  // (null for none): jobs with equal constraints share cached failures, and a key
  // compares them by pointer, not by content.
  const api::NodeConstraints* same_constraints(const api::NodeConstraints* c) {
    if (c == nullptr) return nullptr;
    auto [it, fresh] = constraints_seen_.try_emplace(c, nullptr);
    if (fresh) it->second = constraints_by_content_.try_emplace(ConstraintsKey{c}, c).first->second;
    return it->second;
  }
  std::unordered_map<const api::NodeConstraints*, const api::NodeConstraints*> constraints_seen_;
  // admitted(): by (the constraints of same_constraints(), the job's node count).
  std::map<std::pair<const api::NodeConstraints*, int>, Admitted> admitted_;
  // The job run() is placing: its admitted set (null for a job without constraints).
  const Admitted* admitted_now_ = nullptr;
  // same_constraints() and admitted() of recent jobs' constraints, direct-mapped by
  // address: most constrained jobs then cost no hashed or ordered lookup.
  struct RecentConstraints {
    const api::NodeConstraints* c = nullptr;
    int nodes = 0;
    const api::NodeConstraints* same = nullptr;
    const Admitted* admitted = nullptr;
  };
  std::array<RecentConstraints, 64> recent_{};
  const RecentConstraints& recent(const PendingJob& job) {
    RecentConstraints& r = recent_[(reinterpret_cast<uintptr_t>(job.constraints) >> 4) & 63];
    if (r.c != job.constraints || r.nodes != job.nodes) {
      const api::NodeConstraints* same = same_constraints(job.constraints);
      r = RecentConstraints{job.constraints, job.nodes, same, &admitted(same, job.nodes)};
    }
    return r;
  }
  std::map<ConstraintsKey, const api::NodeConstraints*> constraints_by_content_;
  // For resources_free_at(): each node's holders of CPUs or memory as (end, cpus,
  // memory), by end; built on first use in a pass.
  std::optional<std::map<uint32_t, std::vector<std::tuple<int64_t, int, int64_t>>>> share_ends_;
  // The fewest CPUs and MiB any schedulable node offers (INT64_MAX: none reports
  // them), for never_fits_resources(); found on first use in a pass.
  std::optional<std::pair<int64_t, int64_t>> smallest_;
  // estimate_window()'s: each reservation's next window start after now (kNever: none).
  std::map<std::string, int64_t, std::less<>> window_starts_;
  // (vendor or -1, model) -> keys_of(): the (vendor, model) keys a job may use.
  std::map<std::pair<int, std::string_view>, std::vector<int>> keys_cache_;
};

}  // namespace tessel::scheduler::detail
