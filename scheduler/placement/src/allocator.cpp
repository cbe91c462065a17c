// ModuleGroupAllocator: node and hold bookkeeping plus introspection; the
// scheduling pass itself lives in schedule_pass.cpp, the indexes in cluster_state.cpp.
#include "tessel/scheduler/allocator.hpp"

#include <algorithm>

#include "cluster_state.hpp"
#include "preemption.hpp"
#include "schedule_pass.hpp"
#include "tessel/api/topology.hpp"

namespace tessel::scheduler {

using detail::ClusterState;
using detail::Node;
using masks::Mask;

struct ModuleGroupAllocator::Impl {
  ClusterState state;
  detail::PassBuffers pass_buffers;
};

ModuleGroupAllocator::ModuleGroupAllocator() : impl_(std::make_unique<Impl>()) {}
ModuleGroupAllocator::~ModuleGroupAllocator() = default;

void ModuleGroupAllocator::set_topology_levels(std::vector<std::string> levels) {
  impl_->state.topology_levels = std::move(levels);
}

void ModuleGroupAllocator::upsert_node(const NodeSpec& spec) {
  ClusterState& st = impl_->state;
  uint32_t n = st.node_for(spec.name);
  st.nodes[n].schedulable = false;
  st.reindex(n);  // Takes the node out of every index before its keys change.

  Node& node = st.nodes[n];
  node.vendor = spec.vendor;
  node.gang_block = spec.gang_block;
  node.driver_version = spec.driver_version;
  st.set_labels(n, spec.labels);
  node.reserved = nullptr;
  if (!spec.reservations.empty()) {
    node.reserved = std::make_unique<detail::NodeReservations>();
    node.reserved->windows = spec.reservations;
  }
  node.cpus = std::max(spec.cpus, 0);
  node.memory_mib = std::max<int64_t>(spec.memory_mib, 0);
  node.present = 0;
  node.healthy = 0;
  for (int i = 0; i < masks::kMaxSlots; ++i) node.index[i] = i;
  // Gaudi groups live within module ids 0..7, Neuron groups within 0..15; other slots
  // are kept but never placed.
  Mask placeable = ~Mask{0};
  if (spec.vendor == api::Vendor::habana) placeable = masks::kGaudiAll;
  if (spec.vendor == api::Vendor::neuron) placeable = masks::kNeuronAll;
  std::vector<std::pair<std::string, Mask>> models;
  for (const NodeSpec::Card& card : spec.cards) {
    if (card.module_id < 0 || card.module_id >= masks::kMaxSlots) continue;
    Mask bit = Mask{1} << card.module_id;
    node.present |= bit;
    if (card.healthy) node.healthy |= bit;
    node.index[card.module_id] = card.index;
    if (card.model.empty()) continue;
    auto it = std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == card.model; });
    if (it == models.end()) {
      models.emplace_back(card.model, bit);
    } else {
      it->second |= bit;
    }
  }
  // One rule per node, from its cards' model (a Neuron node is Trainium or Inferentia).
  node.rule = api::group_rule(spec.vendor, models.empty() ? std::string_view{} : std::string_view{models[0].first});
  node.keys.clear();
  node.keys.push_back({st.key_for(spec.vendor, ""), node.present & placeable});
  std::sort(models.begin(), models.end());
  for (const auto& [model, mask] : models) node.keys.push_back({st.key_for(spec.vendor, model), mask & placeable});
  node.schedulable = spec.schedulable;
  st.reindex(n);
}

void ModuleGroupAllocator::set_schedulable(const std::string& name, bool schedulable) {
  ClusterState& st = impl_->state;
  auto n = st.find_node(name);
  if (!n || st.nodes[*n].schedulable == schedulable) return;
  st.nodes[*n].schedulable = schedulable;
  st.reindex(*n);
}

bool ModuleGroupAllocator::has_node(const std::string& name) const { return impl_->state.find_node(name).has_value(); }

bool ModuleGroupAllocator::any_free_card() const {
  for (const Node& n : impl_->state.nodes)
    if (n.schedulable && (n.present & n.healthy & ~n.held) != 0) return true;
  return false;
}

void ModuleGroupAllocator::hold(const std::string& job_id, const std::vector<api::Allocation>& allocations,
                                std::optional<int64_t> end_ms) {
  (void)try_hold(job_id, allocations, end_ms);
}

Status ModuleGroupAllocator::try_hold(const std::string& job_id, const std::vector<api::Allocation>& allocations,
                                      std::optional<int64_t> end_ms) {
  ClusterState& st = impl_->state;
  auto existing = st.find_job(job_id);
  // Validate everything before changing anything.
  for (const api::Allocation& a : allocations) {
    auto n = st.find_node(a.node);
    for (int m : a.module_ids) {
      if (m < 0 || m >= masks::kMaxSlots) {
        return Error{"holding cards for job " + job_id + ": module id " + std::to_string(m) + " on node " + a.node +
                     " is outside 0..31"};
      }
      if (!n) continue;
      int32_t owner = st.nodes[*n].owner[m];
      if (owner != detail::kNoJob && (!existing || owner != *existing)) {
        return Error{"holding cards for job " + job_id + ": card " + std::to_string(m) + " on node " + a.node +
                     " is held by job " + st.jobs[owner].id};
      }
    }
  }
  bool any = std::any_of(allocations.begin(), allocations.end(),
                         [](const auto& a) { return !a.module_ids.empty() || a.cpus > 0 || a.memory_mib > 0; });
  if (!any) {
    if (existing) st.jobs[*existing].end_ms = end_ms;
    return ok_status();
  }
  int32_t h = st.job_handle(job_id);
  st.jobs[h].end_ms = end_ms;
  for (const api::Allocation& a : allocations) {
    const bool share_held = std::any_of(st.jobs[h].shares.begin(), st.jobs[h].shares.end(),
                                        [&](const detail::Share& sh) { return st.nodes[sh.node].name == a.node; });
    if (!share_held) st.hold_share(h, st.node_for(a.node), a.cpus, a.memory_mib);
    if (a.module_ids.empty()) continue;
    uint32_t n = st.node_for(a.node);
    Node& node = st.nodes[n];
    Mask m = 0;
    for (size_t i = 0; i < a.module_ids.size(); ++i) {
      int slot = a.module_ids[i];
      m |= Mask{1} << slot;
      // Remember device indices of cards the node has not reported yet.
      if ((node.present & (Mask{1} << slot)) == 0 && i < a.indices.size()) node.index[slot] = a.indices[i];
    }
    m &= ~node.held;  // Cards this job already holds.
    if (m != 0) st.hold_cards(h, n, m);
  }
  return ok_status();
}

void ModuleGroupAllocator::release(const std::string& job_id) {
  ClusterState& st = impl_->state;
  if (auto h = st.find_job(job_id)) st.release_cards(*h, std::nullopt);
}

void ModuleGroupAllocator::release_on_node(const std::string& job_id, const std::string& node) {
  ClusterState& st = impl_->state;
  auto h = st.find_job(job_id);
  auto n = st.find_node(node);
  if (h && n) st.release_cards(*h, *n);
}

uint32_t PendingReasons::intern(const std::string& text) {
  auto [it, fresh] = text_index_.try_emplace(text, static_cast<uint32_t>(texts_.size()));
  if (fresh) texts_.push_back(text);
  return it->second;
}

const std::string* PendingReasons::find(std::string_view id) const {
  for (const Entry& e : entries_)
    if (e.job_id == id) return &texts_[e.text];
  return nullptr;
}

ScheduleResult ModuleGroupAllocator::schedule(const std::vector<PendingJob>& queue, int64_t now_ms,
                                              std::vector<ProjectLimits>* limits) {
  impl_->state.refresh_reservations(now_ms);
  detail::SchedulePass pass(impl_->state, impl_->pass_buffers, now_ms, limits);
  return pass.run(queue);
}

PreemptionOutcome ModuleGroupAllocator::plan_preemption(const PreemptionRequest& req) const {
  impl_->state.refresh_reservations(req.now_ms);
  return detail::plan_preemption(impl_->state, req);
}

ModuleGroupAllocator::Resources ModuleGroupAllocator::resources(const std::string& name) const {
  const ClusterState& st = impl_->state;
  auto n = st.find_node(name);
  if (!n) return {};
  const Node& node = st.nodes[*n];
  return Resources{node.cpus, node.cpus_used, node.memory_mib, node.memory_used};
}

std::optional<std::string> ModuleGroupAllocator::holder(const std::string& node, int module_id) const {
  const ClusterState& st = impl_->state;
  auto n = st.find_node(node);
  if (!n || module_id < 0 || module_id >= masks::kMaxSlots) return std::nullopt;
  int32_t owner = st.nodes[*n].owner[module_id];
  if (owner == detail::kNoJob) return std::nullopt;
  return st.jobs[owner].id;
}

std::map<int, std::vector<api::Group>> ModuleGroupAllocator::free_groups(const std::string& name) const {
  std::map<int, std::vector<api::Group>> out;
  const ClusterState& st = impl_->state;
  auto n = st.find_node(name);
  if (!n) return out;
  const Node& node = st.nodes[*n];
  Mask free = node.present & node.healthy & ~node.held;
  if (node.rule == api::GroupRule::any_subset) {
    for (int s : masks::slots(free)) out[1].push_back({s});
    return out;
  }
  for (int size = 1; size <= masks::popcount(free); ++size)
    ClusterState::for_each_group(node, free, size, [&](Mask g) { out[size].push_back(masks::slots(g)); });
  return out;
}

std::map<std::string, std::vector<api::Allocation>> ModuleGroupAllocator::holdings() const {
  std::map<std::string, std::vector<api::Allocation>> out;
  const ClusterState& st = impl_->state;
  for (const detail::JobHold& job : st.jobs) {
    if (!job.live || job.cards.empty()) continue;
    auto& allocs = out[job.id];
    for (const auto& [n, m] : job.cards) {
      api::Allocation a;
      a.node = st.nodes[n].name;
      a.rank = static_cast<int>(allocs.size());
      for (int s : masks::slots(m)) {
        a.module_ids.push_back(s);
        a.indices.push_back(st.nodes[n].index[s]);
      }
      for (const detail::Share& sh : job.shares) {
        if (sh.node != n) continue;
        a.cpus = sh.cpus;
        a.memory_mib = sh.memory_mib;
      }
      allocs.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace tessel::scheduler
