#pragma once
// CardHistory: the last hour of each card's readings (utilisation, memory used,
// temperature, power) as heartbeats bring them, for the console's node view
// (GET /v1/nodes/{name}/history). In memory only: a restarted scheduler starts
// empty. At most one sample per node per `resolution_ms` (30 s by default, so one
// heartbeat in six at the default interval): 1,000 nodes of 8 cards hold at most
// 968,000 samples of 24 bytes, about 23 MiB.
//
// Thread-safe: heartbeats record while the HTTP layer reads.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

class CardHistory {
 public:
  struct Sample {
    int64_t at_ms = 0;
    // A reading the tool did not give is absent.
    std::optional<float> utilization_pct;
    std::optional<float> memory_used_pct;  // memory_used_mib / memory_total_mib.
    std::optional<float> temperature_c;
    std::optional<float> power_w;
  };
  struct Card {
    int module_id = 0;
    std::vector<Sample> samples;  // Oldest first.
  };

  explicit CardHistory(int64_t window_ms = 3'600'000, int64_t resolution_ms = 30'000);

  // Adds one sample per device at `now_ms`, unless the node's last one is less than
  // the resolution old; drops what is older than the window.
  void record(const std::string& node, const std::vector<api::Device>& devices, int64_t now_ms) EXCLUDES(mu_);
  // The node's cards by module id, with the samples still within the window at
  // `now_ms`; empty for an unknown node.
  std::vector<Card> of(const std::string& node, int64_t now_ms) const EXCLUDES(mu_);
  // A deleted node's history goes with it.
  void forget(const std::string& node) EXCLUDES(mu_);

  int64_t window_ms() const { return window_ms_; }
  int64_t resolution_ms() const { return resolution_ms_; }

 private:
  struct NodeHistory {
    int64_t last_ms = 0;
    std::map<int, std::deque<Sample>> cards;  // By module id.
  };

  const int64_t window_ms_;
  const int64_t resolution_ms_;
  mutable Mutex mu_;
  std::unordered_map<std::string, NodeHistory> nodes_ GUARDED_BY(mu_);
};

}  // namespace tessel::scheduler
