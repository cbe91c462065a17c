#pragma once
// The agents' parked long polls (GET /v1/agent/desired?version=V), by node: each is
// a callback that answers the poll, stored until the node's desired state changes,
// the HTTP layer's timer expires it, or the scheduler shuts down. Counts those
// waiting against a limit (0: none) and those refused at it ("shed": told to poll
// again after poll_after_ms), warning at most once a minute while it sheds.
//
// Not thread-safe: its owner (ClusterState) keeps it under its own mutex. It never
// calls a callback itself: take() and take_all() hand them back to the caller, who
// answers them with the node's state.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/base/result.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

class LongPolls {
 public:
  using Done = std::function<void(const Result<api::DesiredState>&)>;

  // `max_waiting` 0: no limit. `clock` paces the shedding warning.
  LongPolls(int64_t max_waiting, int poll_after_ms, const Clock& clock)
      : max_waiting_(max_waiting), poll_after_ms_(poll_after_ms), clock_(clock) {}

  // Whether one more poll may park. False at the limit: the poll is counted as shed
  // (and logged, once a minute) and should be answered at once with poll_after_ms().
  bool admit();
  // Parks `done` for `node`; returns its id (never 0).
  uint64_t park(const std::string& node, Done done);
  // Takes back poll `id` of `node`, if it still waits.
  std::optional<Done> take(const std::string& node, uint64_t id);
  // Takes back every poll of `node` (oldest first).
  std::vector<Done> take_all(const std::string& node);
  // The nodes with a poll waiting.
  std::vector<std::string> nodes() const;

  int64_t waiting() const { return waiting_; }
  uint64_t shed_total() const { return shed_total_; }
  int poll_after_ms() const { return poll_after_ms_; }

 private:
  struct Parked {
    uint64_t id;
    Done done;
  };
  const int64_t max_waiting_;
  const int poll_after_ms_;
  const Clock& clock_;
  std::map<std::string, std::vector<Parked>> by_node_;
  uint64_t next_id_ = 1;
  int64_t waiting_ = 0;
  uint64_t shed_total_ = 0;
  std::optional<int64_t> warned_at_ns_;
};

}  // namespace tessel::scheduler
