// ClusterState: reservations (issue 32, part 4). The table lives in memory under mu_
// and in the store (one record per reservation); placement sees each reserved node's
// windows through its NodeSpec (node_spec_locked), refreshed when one is made or
// deleted. Whether a window is open is decided by the pass from its own now (the
// injected clock), so nothing here runs on a timer: an ended reservation stays,
// shown as ended, until an admin deletes it.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "tessel/base/log_safe.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

bool names(const api::Reservation& r, const std::string& node) {
  return std::binary_search(r.nodes.begin(), r.nodes.end(), node);
}

bool matches(const api::Labels& labels, const api::Labels& selector) {
  return std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
    auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
}

}  // namespace

std::vector<api::Reservation> ClusterState::reservations() const {
  MutexLock lk(mu_);
  std::vector<api::Reservation> out;
  out.reserve(reservations_.size());
  for (const auto& [_, r] : reservations_) out.push_back(r);
  return out;
}

Result<api::Reservation> ClusterState::reservation(const std::string& name) const {
  MutexLock lk(mu_);
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return Error::not_found("reservation " + name + " not found");
  return it->second;
}

Result<api::Reservation> ClusterState::create_reservation(api::Reservation r, const std::string& who) {
  MutexLock lk(mu_);
  const int64_t now = clock_.now_ms();
  if (reservations_.count(r.name) != 0) return Error::conflict("reservation " + r.name + " already exists");
  if (r.end_ms <= now) return Error::invalid("end: " + api::format_rfc3339(r.end_ms) + " is already past", "end");
  // A node another reservation holds for an overlapping window.
  auto taken_by = [&](const std::string& node) REQUIRES(mu_) -> const api::Reservation* {
    for (const auto& [_, o] : reservations_)
      if (o.end_ms > now && o.overlaps(r) && names(o, node)) return &o;
    return nullptr;
  };
  if (r.count == 0) {
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      if (nodes_.find(r.nodes[i]) == nodes_.end())
        return Error::invalid("nodes[" + std::to_string(i) + "]: unknown node " + r.nodes[i],
                              "nodes[" + std::to_string(i) + "]");
      if (const api::Reservation* o = taken_by(r.nodes[i]))
        return Error::invalid("nodes: node " + r.nodes[i] + " is reserved by " + o->name + " from " +
                                  api::format_rfc3339(o->start_ms) + " to " + api::format_rfc3339(o->end_ms),
                              "nodes");
    }
  } else {
    int matching = 0;
    for (const auto& [name, n] : nodes_) {
      if (n.down || !matches(effective_labels(n.rec), r.node_selector)) continue;
      ++matching;
      if (static_cast<int>(r.nodes.size()) < r.count && taken_by(name) == nullptr) r.nodes.push_back(name);
    }
    if (static_cast<int>(r.nodes.size()) < r.count) {
      const std::string with = r.node_selector.empty() ? "" : " with " + api::format_labels(r.node_selector);
      return Error::invalid("count: " + std::to_string(r.count) + " nodes asked, but only " +
                                std::to_string(r.nodes.size()) + " of the " + std::to_string(matching) +
                                " ready nodes" + with + " are free of other reservations in the window",
                            "count");
    }
    std::sort(r.nodes.begin(), r.nodes.end());
  }
  r.created_by = who;
  r.created_at_ms = now;
  Txn txn;
  txn.batch.put_reservations.push_back(r);
  txn.apply.push_back([this, r]() REQUIRES(mu_) {
    reservations_[r.name] = r;
    spdlog::info("reservation {} made: {} node(s) {} to {}{}", log_safe(r.name), r.nodes.size(),
                 api::format_rfc3339(r.start_ms), api::format_rfc3339(r.end_ms), r.maintenance ? ", maintenance" : "");
    refresh_reserved_nodes_locked(r.nodes);
  });
  if (!commit_locked(txn, "reservation")) return storage_unavailable("the reservation");
  return r;
}

Result<api::Reservation> ClusterState::delete_reservation(const std::string& name) {
  MutexLock lk(mu_);
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return Error::not_found("reservation " + name + " not found");
  const api::Reservation gone = it->second;
  Txn txn;
  txn.batch.delete_reservations.push_back(name);
  txn.apply.push_back([this, gone]() REQUIRES(mu_) {
    reservations_.erase(gone.name);
    spdlog::info("reservation {} deleted", log_safe(gone.name));
    refresh_reserved_nodes_locked(gone.nodes);
  });
  if (!commit_locked(txn, "reservation delete")) return storage_unavailable("the reservation's deletion");
  return gone;
}

Status ClusterState::check_reservation_use(const api::JobSpec& spec, const std::string& user, bool admin) const {
  const std::string& name = spec.constraints.reservation;
  if (name.empty()) return ok_status();
  MutexLock lk(mu_);
  auto it = reservations_.find(name);
  if (it == reservations_.end()) return Error::invalid("reservation: unknown reservation " + name, "reservation");
  const api::Reservation& r = it->second;
  if (r.end_ms <= clock_.now_ms())
    return Error::invalid("reservation: " + name + " ended at " + api::format_rfc3339(r.end_ms), "reservation");
  if (r.maintenance)
    return Error{"reservation: " + name + " is a maintenance reservation; no job runs in it",
                 ErrorCode::permission_denied, "reservation"};
  if (!admin && !r.allows(user, spec.project))
    return Error{"reservation: " + name + " admits neither user " + user + " nor project " + spec.project,
                 ErrorCode::permission_denied, "reservation"};
  return ok_status();
}

std::vector<ReservationWindow> ClusterState::reservation_windows_locked(const std::string& node) const {
  std::vector<ReservationWindow> out;
  for (const auto& [_, r] : reservations_)
    if (names(r, node)) out.push_back(ReservationWindow{r.name, r.start_ms, r.end_ms, r.maintenance});
  return out;
}

std::vector<api::Reservation> ClusterState::node_reservations_locked(const std::string& node, int64_t now) const {
  std::vector<api::Reservation> out;
  for (const auto& [_, r] : reservations_)
    if (r.end_ms > now && names(r, node)) out.push_back(r);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start_ms < b.start_ms; });
  return out;
}

void ClusterState::refresh_reserved_nodes_locked(const std::vector<std::string>& nodes) {
  for (const std::string& name : nodes) {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) continue;
    alloc_.upsert_node(node_spec_locked(it->second));
  }
  mark_dirty_locked();
  ++nodes_changes_;
}

}  // namespace tessel::scheduler
