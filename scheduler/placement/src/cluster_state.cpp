#include "cluster_state.hpp"

#include <algorithm>
#include <cassert>

namespace tessel::scheduler::detail {

uint32_t ClusterState::fit_class(const Node& node, Mask free, int size) {
  // Smallest enclosing free block (or run) first, then the fewest free cards.
  auto cls = [](int block_rank, Mask free_in_rule) {
    return static_cast<uint32_t>(block_rank * 64 + masks::popcount(free_in_rule));
  };
  switch (node.rule) {
    case api::GroupRule::any_subset: {
      const int count = masks::popcount(free);
      return count >= size ? static_cast<uint32_t>(count) : kNoFit;
    }
    case api::GroupRule::neuron16: {
      const int block = masks::neuron_fit_block(free, size);
      return block == 0 ? kNoFit : cls(__builtin_ctz(static_cast<unsigned>(block)), free & masks::kNeuronAll);
    }
    case api::GroupRule::ring16: {
      const int run = masks::ring_fit_run(free, size);
      return run == 0 ? kNoFit : cls(run, free & masks::kNeuronAll);
    }
    case api::GroupRule::buddy8: break;
  }
  const int block = masks::gaudi_fit_block(free, size);
  return block == 0 ? kNoFit : cls(__builtin_ctz(static_cast<unsigned>(block)), free & masks::kGaudiAll);
}

Mask ClusterState::pick_group(const Node& node, Mask free, int size) {
  switch (node.rule) {
    case api::GroupRule::any_subset:
      return node.vendor == api::Vendor::mthreads ? masks::numa_half_first(free, size) : masks::lowest_bits(free, size);
    case api::GroupRule::neuron16: return masks::neuron_best_group(free, size);
    case api::GroupRule::ring16: return masks::ring_best_group(free, size);
    case api::GroupRule::buddy8: break;
  }
  return masks::gaudi_best_group(free, size);
}

Need need_on(const Node& node, int devices, int cpus, int64_t memory_mib) {
  Need need{cpus, memory_mib};
  const int cards = masks::popcount(node.present);
  if (devices <= 0 || cards <= 0) return need;
  // A node with fewer CPUs than cards has no whole CPU per card to share out: jobs that
  // do not ask CPUs are not counted (nor fenced) there, so its cards stay usable.
  if (need.cpus <= 0 && node.cpus >= cards) need.cpus = static_cast<int>(int64_t{node.cpus} * devices / cards);
  if (need.memory_mib <= 0 && node.memory_mib > 0)
    need.memory_mib = std::max<int64_t>(1, node.memory_mib * devices / cards);
  return need;
}

uint32_t ClusterState::node_for(const std::string& name) {
  auto it = node_by_name_.find(name);
  if (it != node_by_name_.end()) return it->second;
  uint32_t n = static_cast<uint32_t>(nodes.size());
  Node node;
  node.name = name;
  node.owner.fill(kNoJob);
  for (int i = 0; i < masks::kMaxSlots; ++i) node.index[i] = i;
  nodes.push_back(std::move(node));
  node_by_name_.emplace(name, n);
  return n;
}

std::optional<uint32_t> ClusterState::find_node(const std::string& name) const {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end()) return std::nullopt;
  return it->second;
}

int ClusterState::key_for(api::Vendor vendor, const std::string& model) {
  auto [it, inserted] = key_by_name_.emplace(std::make_pair(vendor, model), static_cast<int>(keys.size()));
  if (inserted) {
    KeyIndex k;
    k.vendor = vendor;
    k.model = model;
    keys.push_back(std::move(k));
  }
  return it->second;
}

std::optional<int> ClusterState::find_key(api::Vendor vendor, const std::string& model) const {
  auto it = key_by_name_.find(std::make_pair(vendor, model));
  if (it == key_by_name_.end()) return std::nullopt;
  return it->second;
}

void ClusterState::unindex(uint32_t n) {
  Node& node = nodes[n];
  for (const auto& [slot, entry] : node.fit_entries) keys[slot / kSizes].fit[slot % kSizes].erase(entry);
  node.fit_entries.clear();
  for (int c : node.counted) --keys[c / kSizes].capacity[c % kSizes];
  node.counted.clear();
  if (node.in_key_nodes) {
    for (const NodeKey& k : node.keys) keys[k.key].nodes.erase(n);
    node.in_key_nodes = false;
    --schedulable_count;
  }
}

void ClusterState::reindex(uint32_t n) {
  unindex(n);
  Node& node = nodes[n];
  if (!node.schedulable) return;
  node.in_key_nodes = true;
  ++schedulable_count;
  for (const NodeKey& k : node.keys) {
    keys[k.key].nodes.insert(n);
    const Mask usable = node.usable(k);
    for (int size = 1; size <= masks::popcount(usable); ++size) {
      if (fit_class(node, usable, size) == kNoFit) continue;
      ++keys[k.key].capacity[masks::size_index(size)];
      node.counted.push_back(k.key * kSizes + masks::size_index(size));
    }
  }
  refresh_fit(n);
}

void ClusterState::refresh_fit(uint32_t n) {
  Node& node = nodes[n];
  std::vector<std::pair<int, uint64_t>>& fresh = scratch_;
  fresh.clear();
  if (node.in_key_nodes) {
    for (const NodeKey& k : node.keys) {
      Mask free = node.free_cards(k, /*honour_blocked=*/true);
      for (int size = 1; size <= masks::popcount(free); ++size) {
        uint32_t cls = fit_class(node, free, size);
        if (cls == kNoFit) continue;
        fresh.emplace_back(k.key * kSizes + masks::size_index(size), (uint64_t{cls} << 32) | n);
      }
    }
  }
  // Both lists are in (key, size) order; touch only the entries that changed.
  for (const auto& old : node.fit_entries) {
    if (std::find(fresh.begin(), fresh.end(), old) == fresh.end())
      keys[old.first / kSizes].fit[old.first % kSizes].erase(old.second);
  }
  for (const auto& e : fresh) {
    if (std::find(node.fit_entries.begin(), node.fit_entries.end(), e) == node.fit_entries.end())
      keys[e.first / kSizes].fit[e.first % kSizes].insert(e.second);
  }
  node.fit_entries.swap(fresh);
}

int32_t ClusterState::job_handle(const std::string& id) {
  auto it = job_by_id_.find(id);
  if (it != job_by_id_.end()) return it->second;
  int32_t h;
  if (!free_handles_.empty()) {
    h = free_handles_.back();
    free_handles_.pop_back();
  } else {
    h = static_cast<int32_t>(jobs.size());
    jobs.emplace_back();
  }
  jobs[h] = JobHold{id, {}, {}, std::nullopt, true};
  job_by_id_.emplace(id, h);
  return h;
}

std::optional<int32_t> ClusterState::find_job(const std::string& id) const {
  auto it = job_by_id_.find(id);
  if (it == job_by_id_.end()) return std::nullopt;
  return it->second;
}

void ClusterState::hold_cards(int32_t h, uint32_t n, Mask m) {
  Node& node = nodes[n];
  assert((node.held & m) == 0);
  node.held |= m;
  masks::for_each_slot(m, [&](int s) { node.owner[s] = h; });
  auto& cards = jobs[h].cards;
  auto it = std::find_if(cards.begin(), cards.end(), [&](const auto& c) { return c.first == n; });
  if (it != cards.end()) {
    it->second |= m;
  } else {
    cards.emplace_back(n, m);
  }
  refresh_fit(n);
}

void ClusterState::hold_share(int32_t h, uint32_t n, int cpus, int64_t memory_mib) {
  cpus = std::max(cpus, 0);
  memory_mib = std::max<int64_t>(memory_mib, 0);
  if (cpus == 0 && memory_mib == 0) return;
  Node& node = nodes[n];
  node.cpus_used += cpus;
  node.memory_used += memory_mib;
  auto& shares = jobs[h].shares;
  auto it = std::find_if(shares.begin(), shares.end(), [&](const Share& s) { return s.node == n; });
  if (it == shares.end()) it = shares.insert(shares.end(), Share{n, 0, 0});
  it->cpus += cpus;
  it->memory_mib += memory_mib;
}

void ClusterState::release_cards(int32_t h, std::optional<uint32_t> n) {
  std::erase_if(jobs[h].shares, [&](const Share& sh) {
    if (n && sh.node != *n) return false;
    nodes[sh.node].cpus_used -= sh.cpus;
    nodes[sh.node].memory_used -= sh.memory_mib;
    return true;
  });
  std::erase_if(jobs[h].cards, [&](const std::pair<uint32_t, Mask>& held) {
    if (n && held.first != *n) return false;
    Node& node = nodes[held.first];
    node.held &= ~held.second;
    masks::for_each_slot(held.second, [&](int s) { node.owner[s] = kNoJob; });
    refresh_fit(held.first);
    return true;
  });
  drop_job_if_empty(h);
}

void ClusterState::drop_job_if_empty(int32_t h) {
  if (!jobs[h].cards.empty() || !jobs[h].shares.empty()) return;
  job_by_id_.erase(jobs[h].id);
  jobs[h] = JobHold{};
  free_handles_.push_back(h);
}

void ClusterState::refresh_reservations(int64_t now_ms) {
  reserved_nodes = 0;
  for (Node& node : nodes) {
    if (!node.reserved) continue;
    NodeReservations& r = *node.reserved;
    r.open = nullptr;
    r.next = nullptr;
    for (const ReservationWindow& w : r.windows) {
      if (w.start_ms <= now_ms && now_ms < w.end_ms) r.open = &w;
      if (w.start_ms > now_ms && (r.next == nullptr || w.start_ms < r.next->start_ms)) r.next = &w;
    }
    r.next_in_ms = r.next ? r.next->start_ms - now_ms : 0;
    if (r.open != nullptr || r.next != nullptr) ++reserved_nodes;
  }
}

void ClusterState::set_labels(uint32_t n, const api::Labels& labels) {
  Node& node = nodes[n];
  if (node.labels && *node.labels == labels) return;
  if (node.labels) {
    for (const auto& [key, value] : *node.labels) {
      auto k = nodes_by_label.find(key);
      auto v = k->second.find(value);
      std::vector<uint32_t>& list = v->second;
      list.erase(std::lower_bound(list.begin(), list.end(), n));
      if (list.empty()) k->second.erase(v);
      if (k->second.empty()) nodes_by_label.erase(k);
    }
  }
  node.labels = labels.empty() ? nullptr : std::make_unique<const api::Labels>(labels);
  for (const auto& [key, value] : labels) {
    std::vector<uint32_t>& list = nodes_by_label[key][value];
    list.insert(std::lower_bound(list.begin(), list.end(), n), n);
  }
}

}  // namespace tessel::scheduler::detail
