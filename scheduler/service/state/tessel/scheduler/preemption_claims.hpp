#pragma once
// Preemptions under way: for each pending job that stopped victims to take their
// cards (by the job's sequence number), the cards it will take, the victims it
// waits for and the stops still to come (victims warned by their warning signal,
// stopped once their lead has passed); and when a job that could not preempt yet
// (its victims had not run for the minimum runtime) should look again. ClusterState's pass advances the claims
// (state_preempt.cpp); the claim itself is stored in the job's record, so this is
// rebuilt at restore. Not thread-safe: its owner keeps it under its mutex.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

class PreemptionClaims {
 public:
  // A victim warned and still running: stopped at `at_ms` (the scheduler's clock).
  struct DeferredStop {
    std::string victim;
    int64_t at_ms = 0;
  };
  struct Claim {
    std::vector<api::Allocation> allocations;  // The cards it will take.
    std::vector<std::string> victims;
    std::vector<DeferredStop> stops;  // Not stored: a restart stops them at once.
  };
  using Map = std::map<int64_t, Claim>;

  void put(int64_t seq, Claim claim) { claims_[seq] = std::move(claim); }
  void erase(int64_t seq) { claims_.erase(seq); }
  Map::iterator erase(Map::iterator it) { return claims_.erase(it); }
  bool contains(int64_t seq) const { return claims_.count(seq) > 0; }
  Map::iterator begin() { return claims_.begin(); }
  Map::iterator end() { return claims_.end(); }
  Map::const_iterator begin() const { return claims_.begin(); }
  Map::const_iterator end() const { return claims_.end(); }

  // The stops due at `now_ms` of every claim, as (claimant's seq, victim id).
  std::vector<std::pair<int64_t, std::string>> due_stops(int64_t now_ms) const {
    std::vector<std::pair<int64_t, std::string>> out;
    for (const auto& [seq, claim] : claims_)
      for (const auto& s : claim.stops)
        if (s.at_ms <= now_ms) out.emplace_back(seq, s.victim);
    return out;
  }
  // Forgets claimant `seq`'s deferred stop of `victim` (done or moot).
  void drop_stop(int64_t seq, const std::string& victim) {
    auto it = claims_.find(seq);
    if (it == claims_.end()) return;
    auto& stops = it->second.stops;
    std::erase_if(stops, [&](const DeferredStop& s) { return s.victim == victim; });
  }

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
