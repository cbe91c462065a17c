#pragma once
// ClusterState: the allocator's mutable model of nodes, cards and holds, plus
// the indexes that make a placement ~O(log nodes):
//  - per (vendor, model) "key" and group size, an ordered set of the schedulable
//    nodes that have a free group of that size, ordered by fit class (buddy
//    best-fit block, then free cards: the most used node first) then node number;
//  - per key and size, how many schedulable nodes have such a group among their
//    healthy cards at all (capacity, for pending reasons);
//  - per key, the schedulable nodes (for jobs that need a node but no cards).
// A node's cards are indexed under (vendor, "") and under (vendor, model) for
// each model it carries. Internal to tessel_placement; not thread-safe.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "group_masks.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/api/topology.hpp"
#include "tessel/scheduler/allocator.hpp"  // ReservationWindow.

namespace tessel::scheduler::detail {

using masks::Mask;
inline constexpr int kSizes = masks::kMaxSlots;  // Group sizes 1..32 (masks::size_index 0..31).
inline constexpr uint32_t kNoFit = UINT32_MAX;
inline constexpr int32_t kNoJob = -1;

struct NodeKey {
  int key = 0;
  Mask model_mask = 0;  // Slots whose card carries the key's model (all for model "").
};

// A reserved node's windows (NodeSpec::reservations) and, as of the current pass's (or
// preemption plan's) now, the one open and the next ahead (ClusterState::refresh_reservations).
struct NodeReservations {
  std::vector<ReservationWindow> windows;
  const ReservationWindow* open = nullptr;  // Covers now.
  const ReservationWindow* next = nullptr;  // The earliest that starts after now.
  int64_t next_in_ms = 0;                   // From now to next's start.
};

struct Node {
  std::string name;
  api::Vendor vendor = api::Vendor::habana;
  api::GroupRule rule = api::GroupRule::buddy8;  // api::group_rule(vendor, the cards' model).
  bool schedulable = false;
  std::string gang_block;      // NodeSpec::gang_block.
  std::string driver_version;  // NodeSpec::driver_version.
  // NodeSpec::labels; null when it has none. Behind a pointer: the pass walks nodes in
  // its hot loops, and a map in place made every node 40 bytes bigger.
  std::unique_ptr<const api::Labels> labels;
  // NodeSpec::reservations; null when it has none (most nodes: one pointer test).
  std::unique_ptr<NodeReservations> reserved;
  Mask present = 0;                             // Slots with a card.
  Mask healthy = 0;                             // Slots with a healthy card.
  Mask held = 0;                                // Slots held by some job (maybe no longer present or healthy).
  Mask blocked = 0;                             // Slots reserved in the current schedule() pass.
  std::array<int32_t, masks::kMaxSlots> owner;  // Job handle per slot, or kNoJob.
  std::array<int, masks::kMaxSlots> index;      // Device index per slot.
  std::vector<NodeKey> keys;                    // (vendor, "") first.
  // Entries currently in the index: (key * kSizes + size_index, class << 32 | node).
  std::vector<std::pair<int, uint64_t>> fit_entries;
  std::vector<int> counted;  // key * kSizes + size_index counted in capacity.
  bool in_key_nodes = false;
  // CPUs and memory (MiB) the node offers tasks (0: not reported, not accounted), what
  // jobs hold of them, and what the current schedule() pass reserved.
  int cpus = 0;
  int cpus_used = 0;
  int cpus_blocked = 0;
  int64_t memory_mib = 0;
  int64_t memory_used = 0;
  int64_t memory_blocked = 0;

  Mask usable(const NodeKey& k) const { return present & healthy & k.model_mask; }
  Mask free_cards(const NodeKey& k, bool honour_blocked) const {
    return usable(k) & ~held & (honour_blocked ? ~blocked : ~Mask{0});
  }
  const NodeKey* find_key(int key) const {
    for (const NodeKey& k : keys)
      if (k.key == key) return &k;
    return nullptr;
  }
};

struct KeyIndex {
  api::Vendor vendor = api::Vendor::habana;
  std::string model;
  std::array<std::set<uint64_t>, kSizes> fit;  // class << 32 | node.
  std::array<int, kSizes> capacity{};
  std::set<uint32_t> nodes;
};

// CPUs and memory a job holds on one node.
struct Share {
  uint32_t node = 0;
  int cpus = 0;
  int64_t memory_mib = 0;
};

// CPUs and memory a job takes on one node (0: none of that, or not counted there).
struct Need {
  int cpus = 0;
  int64_t memory_mib = 0;
};
// What a job asking `devices` cards per node and `cpus` and `memory_mib` (0: not asked)
// takes on `node`: what it asked, else the node's share for its cards (node CPUs x
// devices / node cards, so at least one CPU a card; likewise memory; nothing for 0
// cards, nor CPUs on a node with fewer CPUs than cards).
Need need_on(const Node& node, int devices, int cpus, int64_t memory_mib);

struct JobHold {
  std::string id;
  std::vector<std::pair<uint32_t, Mask>> cards;  // By node, in order held.
  std::vector<Share> shares;                     // By node, in order held (a job may hold CPUs but no cards).
  std::optional<int64_t> end_ms;
  bool live = false;
};

class ClusterState {
 public:
  // Fit class of `free` for `size` cards on `node` (lower is a better fit), or kNoFit.
  static uint32_t fit_class(const Node& node, Mask free, int size);
  // The group to take from `free` (see fit_class), or 0.
  static Mask pick_group(const Node& node, Mask free, int size);
  // Calls fn(group) for each valid group of `size` within `usable` on a node whose rule
  // is not any_subset (such nodes have too many groups to list).
  template <class Fn>
  static void for_each_group(const Node& node, Mask usable, int size, Fn&& fn) {
    switch (node.rule) {
      case api::GroupRule::neuron16: masks::for_each_neuron_group(usable, size, fn); return;
      case api::GroupRule::ring16: masks::for_each_ring_group(usable, size, fn); return;
      case api::GroupRule::buddy8: masks::for_each_gaudi_group(usable, size, fn); return;
      case api::GroupRule::any_subset: return;
    }
  }

  // Node by name, created (unschedulable, without cards) when unknown.
  uint32_t node_for(const std::string& name);
  std::optional<uint32_t> find_node(const std::string& name) const;
  // Key id for (vendor, model), created when unknown.
  int key_for(api::Vendor vendor, const std::string& model);
  std::optional<int> find_key(api::Vendor vendor, const std::string& model) const;

  // Rebuilds every index entry of node `n` (after cards or schedulability change).
  void reindex(uint32_t n);
  // Updates only the fit entries of node `n` (after held/blocked change).
  void refresh_fit(uint32_t n);

  int32_t job_handle(const std::string& id);  // Created when unknown.
  std::optional<int32_t> find_job(const std::string& id) const;
  // Holds `m` on node `n` for job `h`; the caller checked the cards are not held.
  void hold_cards(int32_t h, uint32_t n, Mask m);
  // Adds `cpus` and `memory_mib` on node `n` to what job `h` holds (counted on a node
  // that has not reported its own yet too); overcommitting is the caller's to avoid.
  void hold_share(int32_t h, uint32_t n, int cpus, int64_t memory_mib);
  // Frees what job `h` holds on node `n`, cards, CPUs and memory (every node when n is nullopt).
  void release_cards(int32_t h, std::optional<uint32_t> n);

  // Sets each reserved node's open and next window as of `now_ms`, and reserved_nodes.
  void refresh_reservations(int64_t now_ms);
  int reserved_nodes = 0;  // Nodes with a window open or ahead, as of refresh_reservations().

  std::vector<Node> nodes;
  std::vector<KeyIndex> keys;
  std::vector<JobHold> jobs;
  int schedulable_count = 0;
  // Topology levels (ModuleGroupAllocator::set_topology_levels): label keys, narrowest first.
  std::vector<std::string> topology_levels;
  // Nodes by label: key -> value -> node numbers, ascending (every node, schedulable or
  // not). Kept by set_labels(), so a pass finds a selector's or a block's nodes
  // without walking the others.
  using NodesByValue = std::map<std::string, std::vector<uint32_t>, std::less<>>;
  std::map<std::string, NodesByValue, std::less<>> nodes_by_label;
  // Replaces node `n`'s labels (empty: none) and its entries in nodes_by_label.
  void set_labels(uint32_t n, const api::Labels& labels);

  // The reservation the last schedule() pass made. The next pass keeps it for the
  // same job unless other cards free sooner: without time limits every candidate
  // frees "never", and moving the reservation to whichever node has fewest busy
  // cards at the moment would hand the cards already drained to backfill.
  struct LastReservation {
    std::string job_id;
    std::vector<std::pair<std::string, Mask>> groups;  // Node name, cards.
  };
  std::optional<LastReservation> last_reservation;

 private:
  void unindex(uint32_t n);
  void drop_job_if_empty(int32_t h);

  std::unordered_map<std::string, uint32_t> node_by_name_;
  std::map<std::pair<api::Vendor, std::string>, int> key_by_name_;
  std::unordered_map<std::string, int32_t> job_by_id_;
  std::vector<int32_t> free_handles_;
  std::vector<std::pair<int, uint64_t>> scratch_;  // refresh_fit's new entries.
};

}  // namespace tessel::scheduler::detail
