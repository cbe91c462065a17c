// Which nodes a pending job may use (node_filter.hpp).
#include "node_filter.hpp"

#include <algorithm>

namespace tessel::scheduler::detail {
namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

const std::string* label_of(const Node& node, std::string_view key) {
  if (!node.labels) return nullptr;
  auto it = node.labels->find(key);
  return it == node.labels->end() ? nullptr : &it->second;
}

TopologyPlan topology_plan(const PendingJob& job, const std::vector<std::string>& levels) {
  TopologyPlan plan;
  if (job.nodes < 2) return plan;
  const api::Topology* t = job.constraints ? &job.constraints->topology : nullptr;
  if (t && !t->required.empty()) {
    plan.keys.push_back(t->required);
    plan.required = true;
    return plan;
  }
  auto from = levels.begin();
  if (t && !t->preferred.empty()) {
    plan.keys.push_back(t->preferred);
    from = std::find(levels.begin(), levels.end(), t->preferred);
    if (from != levels.end()) ++from;  // Wider levels after it; a key not among them alone.
  }
  for (auto it = from; it != levels.end(); ++it) plan.keys.push_back(*it);
  return plan;
}

bool admits(const Node& node, const api::NodeConstraints& c, int nodes) {
  for (const auto& [key, value] : c.node_selector) {
    const std::string* has = label_of(node, key);
    if (has == nullptr || *has != value) return false;
  }
  if (!c.exclude.empty() && contains(c.exclude, node.name)) return false;
  if (!c.nodelist.empty() && static_cast<int>(c.nodelist.size()) >= nodes && !contains(c.nodelist, node.name))
    return false;
  if (nodes > 1 && !c.topology.required.empty() && label_of(node, c.topology.required) == nullptr) return false;
  return true;
}

std::string constraint_note(const Node& node, const api::NodeConstraints& c, int nodes) {
  for (const auto& [key, value] : c.node_selector) {
    const std::string* has = label_of(node, key);
    if (has == nullptr || *has != value) return std::string("not ").append(key).append("=").append(value);
  }
  if (contains(c.exclude, node.name)) return "in exclude";
  if (!c.nodelist.empty() && static_cast<int>(c.nodelist.size()) >= nodes && !contains(c.nodelist, node.name))
    return "not in nodelist";
  if (nodes > 1 && !c.topology.required.empty() && label_of(node, c.topology.required) == nullptr)
    return "without label " + c.topology.required;
  return "";
}

std::string exclusion_note(const Node& node, const PendingJob& job) {
  if (job.nodes > 1 && !node.gang_block.empty()) return node.gang_block;
  if (!api::driver_version_matches(job.driver_version, node.driver_version))
    return "driver " + (node.driver_version.empty() ? "unknown" : node.driver_version);
  std::string note = job.constraints ? constraint_note(node, *job.constraints, job.nodes) : "";
  return note.empty() ? reservation_note(node, job) : note;
}

bool reservation_admits(const NodeReservations& r, const PendingJob& job) {
  const std::string* mine =
      job.constraints != nullptr && !job.constraints->reservation.empty() ? &job.constraints->reservation : nullptr;
  if (r.open != nullptr) return !r.open->maintenance && mine != nullptr && *mine == r.open->name;
  if (mine != nullptr) return false;  // Its window is not open here (not yet, no longer, or not its node).
  if (r.next == nullptr) return true;
  if (!job.time_limit_s) return false;
  return *job.time_limit_s <= r.next_in_ms / 1000 && *job.time_limit_s * 1000 < r.next_in_ms;
}

int64_t reservation_bound(const Node& node, const PendingJob& job, int64_t start) {
  if (node.reserved == nullptr) return start;
  const NodeReservations& r = *node.reserved;
  if (job.constraints != nullptr && !job.constraints->reservation.empty())
    return r.open != nullptr && start >= r.open->end_ms ? INT64_MAX : start;
  if (r.next == nullptr) return start;
  const bool ends_first = job.time_limit_s && *job.time_limit_s <= (r.next->start_ms - start) / 1000 &&
                          start + *job.time_limit_s * 1000 < r.next->start_ms;
  return ends_first ? start : std::max(start, r.next->end_ms);
}

std::string reservation_note(const Node& node, const PendingJob& job) {
  if (reservation_ok(node, job)) return "";
  const bool member = job.constraints != nullptr && !job.constraints->reservation.empty();
  if (node.reserved == nullptr) return "not in reservation " + job.constraints->reservation;
  const NodeReservations& r = *node.reserved;
  if (r.open != nullptr && r.open->maintenance)
    return "in maintenance (" + r.open->name + ") until " + api::format_rfc3339(r.open->end_ms);
  if (r.open != nullptr) return "reserved for " + r.open->name + " until " + api::format_rfc3339(r.open->end_ms);
  if (member) {
    for (const ReservationWindow& w : r.windows) {
      if (w.name != job.constraints->reservation) continue;
      if (r.next != nullptr && w.start_ms >= r.next->start_ms)
        return "waiting for reservation " + w.name + " to start at " + api::format_rfc3339(w.start_ms);
      return "reservation " + w.name + " ended at " + api::format_rfc3339(w.end_ms);
    }
    return "not in reservation " + job.constraints->reservation;
  }
  return "reserved for " + r.next->name + " from " + api::format_rfc3339(r.next->start_ms) +
         (job.time_limit_s ? "" : " (the job has no time limit)");
}

std::string describe_filter(const api::NodeConstraints& c) {
  std::string out;
  for (const auto& [key, value] : c.node_selector)
    out.append(out.empty() ? "with " : ",").append(key).append("=").append(value);
  if (!c.exclude.empty())
    out.append(out.empty() ? "" : " ").append("outside exclude (").append(joined(c.exclude)).append(")");
  return out;
}

std::string describe(const api::NodeConstraints& c) {
  std::string out;
  for (const auto& [key, value] : c.node_selector)
    out.append(out.empty() ? "" : ",").append(key).append("=").append(value);
  if (!c.nodelist.empty()) out.append(out.empty() ? "" : "; ").append("nodelist ").append(joined(c.nodelist));
  if (!c.exclude.empty()) out.append(out.empty() ? "" : "; ").append("exclude ").append(joined(c.exclude));
  if (!c.topology.required.empty()) out.append(out.empty() ? "" : "; ").append("one ").append(c.topology.required);
  if (!c.topology.preferred.empty())
    out.append(out.empty() ? "" : "; ").append("one ").append(c.topology.preferred).append(" preferred");
  return out;
}

}  // namespace tessel::scheduler::detail
