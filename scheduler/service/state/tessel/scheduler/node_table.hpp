#pragma once
// The scheduler's table of nodes, by name, with what belongs to nodes but is not a
// node: the registrations of new nodes being written (not in the table yet, and a
// second registration of the same name waits for the first), and the fences (cards
// held for a stopped attempt's ranks until their agent reports them gone), by id.
// Not thread-safe: its owner (ClusterState) keeps it under its mutex. at() on a
// name that is not there is a bug of the caller (std::out_of_range).

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/reserved_labels.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler {

struct NodeEntry {
  NodeRecord rec;
  bool down = false;
  std::string token;
  int64_t version = 0;
  std::string degraded;  // From its agent's last heartbeat (not stored): nothing is placed here.
  // What its agent refused for an old leader epoch, as its last heartbeat said (not stored).
  api::EpochRefusals epoch_refusals;
  // The tag of its inventory, new with each whole inventory taken (not stored: 0, no
  // tag, after a restart); heartbeats with readings name it (agent_protocol.hpp).
  int64_t inventory_tag = 0;
};

// The labels placement sees on a node (issue 32): its agent's, with admins' winning
// for the same key, and the scheduler's own (tessel/api/reserved_labels.hpp).
inline api::Labels effective_labels(const NodeRecord& rec) {
  api::Labels out = rec.inventory.labels;
  for (const auto& [k, v] : rec.labels) out[k] = v;
  if (!rec.inventory.containers.empty()) out[std::string(api::kImagesLabel)] = "true";
  return out;
}

class NodeTable {
 public:
  using Map = std::map<std::string, NodeEntry>;

  // --- Nodes, by name ---
  // The node's entry, a new empty one when it is not there yet.
  NodeEntry& upsert(const std::string& name) { return nodes_[name]; }
  NodeEntry& at(const std::string& name) { return nodes_.at(name); }
  const NodeEntry& at(const std::string& name) const { return nodes_.at(name); }
  bool contains(const std::string& name) const { return nodes_.count(name) > 0; }
  Map::iterator find(const std::string& name) { return nodes_.find(name); }
  Map::const_iterator find(const std::string& name) const { return nodes_.find(name); }
  Map::iterator begin() { return nodes_.begin(); }
  Map::iterator end() { return nodes_.end(); }
  Map::const_iterator begin() const { return nodes_.begin(); }
  Map::const_iterator end() const { return nodes_.end(); }
  size_t size() const { return nodes_.size(); }
  void erase(const std::string& name) { nodes_.erase(name); }

  // --- New nodes whose registration is being written ---
  bool registering(const std::string& name) const { return registering_.count(name) > 0; }
  void begin_registration(const std::string& name) { registering_.insert(name); }
  void end_registration(const std::string& name) { registering_.erase(name); }

  // --- Fences, by id ---
  void fence(const Fence& f) { fences_[f.id] = f; }
  void unfence(const std::string& id) { fences_.erase(id); }
  const std::map<std::string, Fence>& fences() const { return fences_; }
  bool any_fence_on(const std::string& node) const {
    return std::any_of(fences_.begin(), fences_.end(), [&](const auto& f) { return f.second.allocation.node == node; });
  }

 private:
  Map nodes_;
  std::set<std::string> registering_;
  std::map<std::string, Fence> fences_;
};

}  // namespace tessel::scheduler
