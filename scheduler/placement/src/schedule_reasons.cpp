#include "schedule_pass.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pending_reasons.hpp"
#include "schedule_pass_util.hpp"

namespace tessel::scheduler::detail {

using pass::node_of;

std::string SchedulePass::reason_for(const PendingJob& job, const std::vector<int>& keys, bool* waiting) {
  *waiting = false;
  if (state_.schedulable_count == 0) return reasons::no_ready_nodes();
  int cluster = static_cast<int>(state_.nodes.size());
  if (job.nodes > cluster) return reasons::cluster_too_small(cluster);
  if (job.constraints && !keys.empty())
    if (std::string why = constraint_reason(job, keys); !why.empty()) return why;
  if (std::string why = reservation_reason(job, keys); !why.empty()) return why;
  int capable = 0;
  for (int k : keys) {
    int c = job.devices == 0 ? static_cast<int>(state_.keys[k].nodes.size())
                             : state_.keys[k].capacity[masks::size_index(job.devices)];
    capable = std::max(capable, c);
  }
  if (capable >= job.nodes && asks_resources(job)) {
    if (std::string why = never_fits_resources(job, keys); !why.empty()) return why;
  }
  if (capable < job.nodes) return reasons::never_fits(job.devices, job.nodes, capable, job.vendor, job.model);
  if (filtered(job)) {
    if (std::string why = filtered_reason(job, keys); !why.empty()) return why;
  }
  if (job.nodes > 1 && job.constraints && !job.constraints->topology.required.empty()) {
    if (std::string why = topology_reason(job, keys, waiting); !why.empty()) {
      if (job.devices == 0) *waiting = false;  // Jobs without cards get no reservation.
      return why;
    }
  }
  if (std::string shortage = short_of_resources(job, keys); !shortage.empty()) {
    *waiting = job.devices > 0;  // Jobs without cards get no reservation.
    return reasons::with_constraints(reasons::waiting_for_resources(shortage), job.constraints);
  }
  if (job.devices == 0) return reasons::never_fits(job.devices, job.nodes, capable, job.vendor, job.model);
  *waiting = true;
  return reasons::with_constraints(reasons::waiting_for_cards(job.devices, job.nodes, job.vendor, job.model),
                                   job.constraints);
}

std::string SchedulePass::constraint_reason(const PendingJob& job, const std::vector<int>& keys) const {
  const api::NodeConstraints& c = *job.constraints;
  for (const std::string& name : c.nodelist) {
    auto n = state_.find_node(name);
    if (!n) return reasons::listed_node(name, "is not known");
    const Node& node = state_.nodes[*n];
    if (!node.in_key_nodes) return reasons::listed_node(name, "is not ready");
    if (std::none_of(keys.begin(), keys.end(), [&](int k) { return node.find_key(k) != nullptr; }))
      return reasons::listed_node(name, "has no " + reasons::cards_phrase(job.vendor, job.model));
    if (std::string note = exclusion_note(node, job); !note.empty()) return reasons::listed_node(name, "is " + note);
  }
  if (c.node_selector.empty() && c.exclude.empty()) return "";
  int best = 0;
  for (int k : keys) {
    int count = 0;
    for (uint32_t n : admitted_now_->nodes)
      count += state_.nodes[n].in_key_nodes && state_.nodes[n].find_key(k) != nullptr ? 1 : 0;
    best = std::max(best, count);
  }
  if (best >= job.nodes) return "";
  return reasons::too_few_matching(best, job.nodes, describe_filter(c));
}

std::string SchedulePass::reservation_reason(const PendingJob& job, const std::vector<int>& keys) const {
  const bool member = job.constraints != nullptr && !job.constraints->reservation.empty();
  if (!member && state_.reserved_nodes == 0) return "";
  bool has_node = false;  // A member: a node of its reservation has the cards it asks for.
  for (int k : keys) {
    for (uint32_t n : state_.keys[k].nodes) {
      const Node& node = state_.nodes[n];
      if (!eligible_but_reservations(node, job)) continue;
      const bool ok = reservation_ok(node, job);
      if (member) {
        const bool in_it =
            node.reserved != nullptr &&
            std::any_of(node.reserved->windows.begin(), node.reserved->windows.end(),
                        [&](const ReservationWindow& w) { return w.name == job.constraints->reservation; });
        has_node = has_node || in_it;
        if (in_it && !ok) return reservation_note(node, job);
        continue;
      }
      if (ok || node.reserved == nullptr) continue;
      // A node that would take the job now but for a reservation: name it.
      const NodeKey* nk = node.find_key(k);
      const bool free_now =
          nk != nullptr && node.in_key_nodes && fits(node, need_on(node, job), true) &&
          (job.devices == 0 || ClusterState::fit_class(node, node.free_cards(*nk, true), job.devices) != kNoFit);
      if (free_now) return "node " + node.name + " is " + reservation_note(node, job);
    }
  }
  if (member && !has_node)
    return "no ready node of reservation " + job.constraints->reservation + " has " +
           reasons::cards_phrase(job.vendor, job.model);
  return "";
}

std::string SchedulePass::never_fits_resources(const PendingJob& job, const std::vector<int>& keys) {
  if (!smallest_) {  // Once a pass: what every schedulable node offers at least (0: no limit).
    smallest_.emplace();
    bool first = true;
    for (const Node& node : state_.nodes) {
      if (!node.in_key_nodes) continue;
      const int64_t cpus = node.cpus > 0 ? node.cpus : INT64_MAX;
      const int64_t memory = node.memory_mib > 0 ? node.memory_mib : INT64_MAX;
      smallest_->first = first ? cpus : std::min(smallest_->first, cpus);
      smallest_->second = first ? memory : std::min(smallest_->second, memory);
      first = false;
    }
  }
  if (job.cpus <= smallest_->first && job.memory_mib <= smallest_->second) return "";  // Every node could.
  int best = 0;
  int most_cpus = 0;
  int64_t most_memory = 0;
  for (int k : keys) {
    int capable = 0;
    for (uint32_t n : state_.keys[k].nodes) {
      const Node& node = state_.nodes[n];
      const NodeKey* nk = node.find_key(k);
      if (nk == nullptr) continue;
      if (job.devices > 0 && ClusterState::fit_class(node, node.usable(*nk), job.devices) == kNoFit) continue;
      most_cpus = std::max(most_cpus, node.cpus);
      most_memory = std::max(most_memory, node.memory_mib);
      if (ever_fits(node, need_on(node, job))) ++capable;
    }
    if (capable >= job.nodes) return "";
    best = std::max(best, capable);
  }
  return reasons::never_fits_resources(job.cpus, job.memory_mib, job.nodes, best, most_cpus, most_memory);
}

std::string SchedulePass::short_of_resources(const PendingJob& job, const std::vector<int>& keys) const {
  // The nodes with a free group of the job's size (the fit index), or for a job
  // without cards every node.
  auto short_on = [&](uint32_t n) -> std::string {
    const Node& node = state_.nodes[n];
    if (!eligible(node, job)) return "";
    const Need need = need_on(node, job);
    if (fits(node, need, true)) return "";
    const int cpus_taken = node.cpus_used + node.cpus_blocked;
    if (node.cpus > 0 && need.cpus > node.cpus - cpus_taken)
      return reasons::cpus_short(node.name, cpus_taken, node.cpus, need.cpus);
    return reasons::memory_short(node.name, node.memory_used + node.memory_blocked, node.memory_mib, need.memory_mib);
  };
  for (int k : keys) {
    if (job.devices > 0) {
      for (uint64_t entry : state_.keys[k].fit[masks::size_index(job.devices)])
        if (std::string why = short_on(node_of(entry)); !why.empty()) return why;
      continue;
    }
    for (uint32_t n : state_.keys[k].nodes)
      if (std::string why = short_on(n); !why.empty()) return why;
  }
  return "";
}

std::string SchedulePass::filtered_reason(const PendingJob& job, const std::vector<int>& keys) const {
  const int size = job.devices;
  auto capable_on = [&](uint32_t n, int k) {
    const Node& node = state_.nodes[n];
    const NodeKey* nk = node.find_key(k);
    return node.in_key_nodes && nk != nullptr &&
           (size == 0 || ClusterState::fit_class(node, node.usable(*nk), size) != kNoFit) && eligible(node, job);
  };
  if (job.constraints) {  // Enough capable nodes among the admitted ones: no walk over every node.
    for (int k : keys) {
      int capable = 0;
      for (uint32_t n : admitted_now_->nodes) capable += capable_on(n, k) ? 1 : 0;
      if (capable >= job.nodes) return "";
    }
  }
  int best = 0;
  std::vector<std::string> notes;
  for (int k : keys) {
    int capable = 0;
    std::vector<std::string> excluded;
    for (uint32_t n : state_.keys[k].nodes) {
      const Node& node = state_.nodes[n];
      const NodeKey* nk = node.find_key(k);
      if (nk == nullptr) continue;
      if (size > 0 && ClusterState::fit_class(node, node.usable(*nk), size) == kNoFit) continue;
      if (eligible(node, job)) {
        ++capable;
      } else if (excluded.size() < 3) {
        excluded.push_back(node.name + ": " + exclusion_note(node, job));
      }
    }
    if (capable >= job.nodes) return "";  // The filters leave enough capable nodes.
    if (capable >= best) {
      best = capable;
      notes = std::move(excluded);
    }
  }
  if (notes.empty()) return "";
  return reasons::excluded_nodes(reasons::never_fits(job.devices, job.nodes, best, job.vendor, job.model),
                                 job.driver_version, notes);
}

}  // namespace tessel::scheduler::detail
