// ClusterState: read-only views (nodes, inventory totals, metrics, status)
// and node draining.
#include <spdlog/spdlog.h>

#include "tessel/base/log_safe.hpp"
#include "tessel/scheduler/state.hpp"
#include "tessel/scheduler/version_skew.hpp"

namespace tessel::scheduler {

std::string ClusterState::node_state_locked(const NodeEntry& n) const {
  if (n.down) return "down";
  if (!n.degraded.empty()) return "degraded";
  return n.rec.drained ? "draining" : "ready";
}

NodeSpec ClusterState::node_spec_locked(const NodeEntry& n) const {
  NodeSpec s;
  s.name = n.rec.name;
  s.vendor = n.rec.inventory.vendor;
  for (const auto& d : n.rec.inventory.devices)
    s.cards.push_back(NodeSpec::Card{d.module_id, d.index, d.model, d.healthy});
  s.schedulable = schedulable(n);
  s.driver_version = n.rec.inventory.driver_version;
  s.cpus = n.rec.inventory.cpus;
  s.memory_mib = n.rec.inventory.memory_mib;
  if (std::string down = api::modules_with_ports_down(n.rec.inventory); !down.empty())
    s.gang_block = "ports down on " + down;
  s.labels = effective_labels(n.rec);
  s.reservations = reservation_windows_locked(n.rec.name);
  return s;
}

NodeView ClusterState::node_view_locked(const NodeEntry& n) const {
  const ModuleGroupAllocator::Resources used = alloc_.resources(n.rec.name);
  NodeView v{n.rec,          node_state_locked(n), n.degraded, {}, alloc_.free_groups(n.rec.name),
             used.cpus_used, used.memory_used};
  for (const auto& d : n.rec.inventory.devices) {
    auto h = alloc_.holder(n.rec.name, d.module_id);
    if (!h) continue;
    auto f = nodes_.fences().find(*h);  // A fence holds cards for its job's stopped attempt.
    v.job_by_module[d.module_id] = f != nodes_.fences().end() ? f->second.job_id : *h;
  }
  v.reservations = node_reservations_locked(n.rec.name, clock_.now_ms());
  return v;
}

std::vector<NodeView> ClusterState::nodes() const {
  MutexLock lk(mu_);
  std::vector<NodeView> out;
  for (const auto& [_, n] : nodes_) out.push_back(node_view_locked(n));
  return out;
}

Result<NodeView> ClusterState::node(const std::string& name) const {
  MutexLock lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return Error::not_found("node " + name + " not found");
  return node_view_locked(it->second);
}

Result<NodeView> ClusterState::set_drained(const std::string& name, bool drained) {
  MutexLock lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return Error::not_found("node " + name + " not found");
  Txn txn;
  NodeRecord rec = it->second.rec;
  rec.drained = drained;
  txn.batch.nodes.push_back(rec);
  txn.apply.push_back([this, name, drained]() REQUIRES(mu_) {
    NodeEntry& n = nodes_.at(name);
    n.rec.drained = drained;
    alloc_.set_schedulable(name, schedulable(n));
    spdlog::info("node {} {}", name, drained ? "drained" : "undrained");
    mark_dirty_locked();
  });
  if (!commit_locked(txn, "drain")) return storage_unavailable("the node's drain state");
  return node_view_locked(it->second);
}

Result<NodeView> ClusterState::set_node_labels(const std::string& name, const api::LabelChange& change) {
  MutexLock lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return Error::not_found("node " + name + " not found");
  auto labels = api::apply_label_change(it->second.rec.labels, change);
  if (!labels) return labels.error();
  if (*labels == it->second.rec.labels) return node_view_locked(it->second);
  Txn txn;
  NodeRecord rec = it->second.rec;
  rec.labels = *labels;
  txn.batch.nodes.push_back(rec);
  txn.apply.push_back([this, name, labels = *labels]() REQUIRES(mu_) {
    NodeEntry& n = nodes_.at(name);
    n.rec.labels = labels;
    alloc_.upsert_node(node_spec_locked(n));
    spdlog::info("node {}: labels set by admins now {}", name, log_safe(api::format_labels(labels)));
    mark_dirty_locked();
    ++nodes_changes_;
  });
  if (!commit_locked(txn, "node labels")) return storage_unavailable("the node's labels");
  return node_view_locked(it->second);
}

Result<NodeView> ClusterState::remove_node(const std::string& name) {
  MutexLock lk(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return Error::not_found("node " + name + " not found");
  if (auto holder = card_holder_on_locked(name))
    return Error::conflict("node " + name + " still holds cards of " + *holder +
                           ": drain it and wait for its jobs to end (or cancel them) before deleting it");
  NodeView last = node_view_locked(it->second);
  Txn txn;
  txn.batch.delete_nodes.push_back(name);
  txn.apply.push_back([this, name, vendor = it->second.rec.inventory.vendor]() REQUIRES(mu_) {
    // The allocator keeps the name as an empty, unschedulable node until it registers again.
    NodeSpec empty;
    empty.name = name;
    empty.vendor = vendor;
    empty.schedulable = false;
    alloc_.upsert_node(empty);
    nodes_.erase(name);
    note_version_skew_locked(name);
    card_history_.forget(name);
    // Its parked polls end at once; the agent registers the node again.
    end_polls_locked(name, Error::unauthenticated("node " + name + " was deleted: register it again"));
    spdlog::info("node {} deleted", name);
  });
  if (!commit_locked(txn, "node delete")) return storage_unavailable("the node's deletion");
  return last;
}

Result<std::vector<CardHistory::Card>> ClusterState::card_history(const std::string& name) const {
  {
    MutexLock lk(mu_);
    if (!nodes_.contains(name)) return Error::not_found("node " + name + " not found");
  }
  return card_history_.of(name, clock_.now_ms());
}

std::optional<std::string> ClusterState::card_holder_on_locked(const std::string& node) const {
  for (const auto& [job, allocations] : alloc_.holdings())
    for (const auto& a : allocations)
      if (a.node == node) return job;
  for (const auto& [id, f] : nodes_.fences())
    if (f.allocation.node == node) return f.job_id + " (fenced until its processes are gone)";
  return std::nullopt;
}

InventoryView ClusterState::inventory() const {
  MutexLock lk(mu_);
  std::map<std::string, InventoryView::Model> models;
  InventoryView v;
  v.nodes_by_state = {{"ready", 0}, {"degraded", 0}, {"draining", 0}, {"down", 0}};
  for (const auto& [name, n] : nodes_) {
    const std::string st = node_state_locked(n);
    ++v.nodes_by_state[st];
    std::map<int, std::string> model_of;
    for (const auto& d : n.rec.inventory.devices) {
      auto& t = models[d.model];
      t.model = d.model;
      t.vendor = api::to_string(n.rec.inventory.vendor);
      ++t.cards;
      if (d.healthy) ++t.healthy;
      if (d.healthy && st == "ready" && !alloc_.holder(name, d.module_id)) ++t.free;
      if (!n.rec.inventory.driver_version.empty()) t.driver_versions.insert(n.rec.inventory.driver_version);
      if (!d.firmware_version.empty()) t.firmware_versions.insert(d.firmware_version);
      if (!d.ports_down.empty()) ++t.ports_down;
      model_of[d.module_id] = d.model;
    }
    if (st != "ready") continue;
    for (const auto& [size, list] : alloc_.free_groups(name))
      for (const auto& g : list)
        if (!g.empty() && model_of.count(g.front())) ++models[model_of[g.front()]].free_groups[size];
  }
  for (auto& [_, m] : models) v.models.push_back(std::move(m));
  return v;
}

StatsSnapshot ClusterState::stats() const {
  MutexLock lk(mu_);
  StatsSnapshot s;
  s.store_write_failures_total = store_write_failures_total_.load();
  s.storage_ok = storage_ok_.load();
  for (auto st : {api::JobState::pending, api::JobState::assigned, api::JobState::running, api::JobState::succeeded,
                  api::JobState::failed, api::JobState::cancelled})
    s.jobs_by_state[api::to_string(st)] = 0;
  for (const auto& [key, e] : jobs_)
    if (!jobs_.is_array(key)) ++s.jobs_by_state[api::to_string(e.job.state)];  // Elements count, parents not.
  s.nodes_by_state = {{"ready", 0}, {"degraded", 0}, {"draining", 0}, {"down", 0}};
  for (const auto& [name, n] : nodes_) {
    const std::string st = node_state_locked(n);
    ++s.nodes_by_state[st];
    if (n.epoch_refusals.total > 0) s.agent_epoch_refusals[name] = n.epoch_refusals.total;
    for (const auto& d : n.rec.inventory.devices) {
      CardCounts& c = s.cards_by_model[d.model];
      ++c.total;
      if (!d.healthy) ++c.unhealthy;
      if (d.healthy && st == "ready" && !alloc_.holder(name, d.module_id)) ++c.free;
      CardTelemetry t{name, d.module_id, d.model, {}, {}, {}, {}};
      if (d.utilization_pct) t.utilization_ratio = static_cast<double>(*d.utilization_pct) / 100.0;
      if (d.memory_used_mib) t.memory_used_bytes = static_cast<double>(*d.memory_used_mib) * 1048576.0;
      if (d.temperature_c) t.temperature_c = static_cast<double>(*d.temperature_c);
      if (d.power_w) t.power_w = static_cast<double>(*d.power_w);
      s.cards.push_back(std::move(t));
    }
  }
  s.version_skew_by_model = versions_.skew();
  counters_.copy_to(s);
  s.active_jobs = active_counts_.total();
  for (const auto& [_, n] : active_counts_.by_user())
    s.active_jobs_max_of_a_user = std::max(s.active_jobs_max_of_a_user, n);
  s.max_active_jobs = opts_.limits.max_active_jobs;
  s.max_active_jobs_per_user = opts_.limits.max_active_jobs_per_user;
  s.long_polls_waiting = polls_.waiting();
  s.long_polls_max = opts_.max_long_polls;
  s.long_polls_shed_total = polls_.shed_total();
  project_stats_locked(s);
  s.usage_card_seconds = book_.totals();
  return s;
}

std::string ClusterState::status_line() const {
  auto s = stats();
  const int64_t degraded = s.nodes_by_state["degraded"];
  return "nodes: " + std::to_string(s.nodes_by_state["ready"]) + " ready, " +
         (degraded ? std::to_string(degraded) + " degraded, " : "") + std::to_string(s.nodes_by_state["draining"]) +
         " draining, " + std::to_string(s.nodes_by_state["down"]) +
         " down; jobs: " + std::to_string(s.jobs_by_state["pending"]) + " pending, " +
         std::to_string(s.jobs_by_state["assigned"] + s.jobs_by_state["running"]) + " running";
}

}  // namespace tessel::scheduler
