#pragma once
// Preemptions under way: for each pending job that stopped victims to take their
// cards (by the job's sequence number), the cards it will take and the victims it
// waits for; and when a job that could not preempt yet (its victims had not run for
// the minimum runtime) should look again. ClusterState's pass advances the claims
// (state_preempt.cpp); the claim itself is stored in the job's record, so this is
// rebuilt at restore. Not thread-safe: its owner keeps it under its mutex.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

class PreemptionClaims {
 public:
  struct Claim {
    std::vector<api::Allocation> allocations;  // The cards it will take.
    std::vector<std::string> victims;
  };
  using Map = std::map<int64_t, Claim>;

  void put(int64_t seq, Claim claim) { claims_[seq] = std::move(claim); }
  void erase(int64_t seq) { claims_.erase(seq); }
  Map::iterator erase(Map::iterator it) { return claims_.erase(it); }
  bool contains(int64_t seq) const { return claims_.count(seq) > 0; }
  Map::iterator begin() { return claims_.begin(); }
  Map::iterator end() { return claims_.end(); }

  // The earliest time a job not yet allowed to preempt may be; reset at each plan.
  void retry_at(int64_t at_ms) {
    if (!retry_at_ms_ || at_ms < *retry_at_ms_) retry_at_ms_ = at_ms;
  }
  void clear_retry() { retry_at_ms_.reset(); }
  // True once, when that time has come at `now_ms`.
  bool take_retry_due(int64_t now_ms) {
    if (!retry_at_ms_ || now_ms < *retry_at_ms_) return false;
    retry_at_ms_.reset();
    return true;
  }

 private:
  Map claims_;
  std::optional<int64_t> retry_at_ms_;
};

}  // namespace tessel::scheduler
