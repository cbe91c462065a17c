#pragma once
// Version numbers the scheduler gives out: each node's desired state (the tasks its
// agent should run) carries a version that rises with every change, and an agent's
// long poll waits for a version other than the one it has; the nodes whose version
// rose in the change being applied are collected here, and their polls are answered
// once the whole change is in. Versions start at the clock's milliseconds, so they
// keep rising across a restart. Inventory tags name each whole inventory a node
// sends (agent_protocol.hpp), from a random 48-bit start, so no two scheduler
// processes are likely to give the same tag to different inventories.
// Not thread-safe: its owner (ClusterState) keeps it under its mutex.

#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace tessel::scheduler {

class NodeVersions {
 public:
  NodeVersions(int64_t first_version, int64_t first_inventory_tag)
      : last_version_(first_version), next_inventory_tag_(first_inventory_tag) {}

  // A new version, higher than every one given before.
  int64_t next() { return ++last_version_; }
  // A new version for `node`, whose polls are answered at take_bumped().
  int64_t bump(const std::string& node) {
    bumped_.insert(node);
    return next();
  }
  bool any_bumped() const { return !bumped_.empty(); }
  // The nodes bumped since the last call.
  std::set<std::string> take_bumped() { return std::exchange(bumped_, {}); }

  int64_t next_inventory_tag() { return next_inventory_tag_++; }

 private:
  int64_t last_version_;
  int64_t next_inventory_tag_;
  std::set<std::string> bumped_;
};

}  // namespace tessel::scheduler
