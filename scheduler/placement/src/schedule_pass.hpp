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

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cluster_state.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {

class SchedulePass {
 public:
  SchedulePass(ClusterState& state, int64_t now_ms, std::vector<ProjectLimits>* limits = nullptr);
  ~SchedulePass();
  SchedulePass(const SchedulePass&) = delete;
  SchedulePass& operator=(const SchedulePass&) = delete;

  ScheduleResult run(const std::vector<PendingJob>& queue);

 private:
  struct Choice {
    uint32_t node = 0;
    Mask group = 0;  // 0 for jobs without cards.
  };
  using Plan = std::vector<Choice>;
  struct Reserved {
    std::string job_id;
    std::optional<int64_t> start_ms;
    std::vector<uint32_t> nodes;  // Ascending.
  };

  // The (vendor, model) keys the job may use, found once per vendor and model a pass.
  const std::vector<int>& keys_of(const PendingJob& job);
  // Whether the job may run on the node at all: its driver version constraint, and
  // for gangs the node's gang_block. filtered(): whether some node may fail that.
  static bool eligible(const Node& node, const PendingJob& job);
  static bool filtered(const PendingJob& job) { return job.nodes > 1 || !job.driver_version.empty(); }
  // For a filtered job whose capacity the filters take away: the reason, naming
  // up to three excluded nodes; "" when the filters exclude no capable node.
  std::string filtered_reason(const PendingJob& job, const std::vector<int>& keys) const;
  std::optional<Plan> plan_without_cards(const PendingJob& job, const std::vector<int>& keys) const;
  // `use_reserved`: may also take reserved cards (only after unreserved ones).
  std::optional<Plan> plan_cards(const PendingJob& job, const std::vector<int>& keys, bool use_reserved) const;
  bool may_use_reserved(const PendingJob& job) const;
  // Sets *waiting when capacity exists and only busy cards stand in the way.
  std::string reason_for(const PendingJob& job, const std::vector<int>& keys, bool* waiting) const;
  void reserve(const PendingJob& job, const std::vector<int>& keys, ScheduleResult& out);
  int64_t card_free_at(const Node& node, int slot) const;
  Placement apply(const PendingJob& job, const Plan& plan);
  api::Allocation allocation(const Choice& c, int rank) const;
  // Quotas: the cards `plan` takes, by model and under "*"; and the reason the job
  // may not take `cards` (nullopt when within its project's limits).
  std::map<std::string, int64_t> cards_by_model(const Plan& plan) const;
  std::optional<std::string> over_limit(const PendingJob& job, const std::map<std::string, int64_t>& cards) const;
  // The same for `n` more cards of one model (or "*"); allocates nothing when within limits.
  std::optional<std::string> over_limit(const PendingJob& job, const std::string& model, int64_t n) const;

  ClusterState& state_;
  int64_t now_ms_;
  std::vector<ProjectLimits>* limits_;
  std::optional<Reserved> reserved_;
  // The previous pass's reservation (ClusterState::last_reservation), for reserve().
  std::optional<ClusterState::LastReservation> previous_;
  // The keys below view strings of run()'s queue, which outlives the pass: with 100,000
  // pending jobs, copying them into every lookup's key was a large share of a pass.
  // (vendor or -1, model, devices, may use reserved, driver version) -> fewest nodes that failed.
  std::map<std::tuple<int, std::string_view, int, bool, std::string_view>, int> failed_;
  // (the same, nodes) -> pending reason (its index in the result's texts), for jobs that failed.
  std::map<std::tuple<int, std::string_view, int, bool, std::string_view, int>, uint32_t> reason_cache_;
  // (vendor or -1, model) -> keys_of(): the (vendor, model) keys a job may use.
  std::map<std::pair<int, std::string_view>, std::vector<int>> keys_cache_;
};

}  // namespace tessel::scheduler::detail
