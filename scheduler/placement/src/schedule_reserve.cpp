#include "schedule_pass.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "schedule_pass_util.hpp"

namespace tessel::scheduler::detail {

using pass::kNever;

namespace {

const std::string kNoTopology;

}  // namespace

int64_t SchedulePass::resources_free_at(uint32_t n, const Need& need, int64_t not_before) {
  const Node& node = state_.nodes[n];
  if (fits(node, need, false)) return not_before;
  if (!ever_fits(node, need)) return kNever;
  if (!share_ends_) {
    share_ends_.emplace();
    for (const JobHold& j : state_.jobs) {
      if (!j.live) continue;
      const int64_t end = j.end_ms ? std::max(now_ms_, *j.end_ms) : kNever;
      for (const Share& sh : j.shares) (*share_ends_)[sh.node].emplace_back(end, sh.cpus, sh.memory_mib);
    }
    for (auto& [_, ends] : *share_ends_) std::sort(ends.begin(), ends.end());
  }
  int64_t cpus_free = int64_t{node.cpus} - node.cpus_used;
  int64_t memory_free = node.memory_mib - node.memory_used;
  for (const auto& [end, cpus, memory] : (*share_ends_)[n]) {
    cpus_free += cpus;
    memory_free += memory;
    if ((node.cpus <= 0 || need.cpus <= cpus_free) && (node.memory_mib <= 0 || need.memory_mib <= memory_free))
      return std::max(not_before, end);
  }
  return kNever;
}

int64_t SchedulePass::card_free_at(const Node& node, int slot) const {
  if ((node.held & (Mask{1} << slot)) == 0) return now_ms_;
  const JobHold& holder = state_.jobs[node.owner[slot]];
  if (!holder.end_ms) return kNever;
  return std::max(now_ms_, *holder.end_ms);
}

void SchedulePass::reserve(const PendingJob& job, const std::vector<int>& keys, ScheduleResult& out) {
  struct Candidate {
    int64_t free_at = kNever;
    int moved = 1;  // 0: the group the previous pass reserved for this job.
    int busy = 0;   // Cards of the group held now.
    uint32_t node = 0;
    Mask group = 0;
    bool operator<(const Candidate& o) const {
      return std::tie(free_at, moved, busy, node) < std::tie(o.free_at, o.moved, o.busy, o.node);
    }
  };
  const bool same_job = previous_ && previous_->job_id == job.id;
  auto kept = [&](uint32_t n, Mask group) {
    if (!same_job) return false;
    for (const auto& [name, cards] : previous_->groups)
      if (cards == group && name == state_.nodes[n].name) return true;
    return false;
  };
  const int size = job.devices;
  auto latest = [](const std::vector<Candidate>& chosen) {
    int64_t at = 0;
    for (const Candidate& c : chosen) at = std::max(at, c.free_at);
    return at;
  };
  std::optional<std::vector<Candidate>> best;
  // The job's nodes among `cands`: a short nodelist's first, then those that free soonest.
  auto consider = [&](std::vector<Candidate> cands) {
    if (static_cast<int>(cands.size()) < job.nodes) return;
    auto first = cands.begin();
    if (lists_some(job)) {
      const auto& list = job.constraints->nodelist;
      first = std::stable_partition(cands.begin(), cands.end(), [&](const Candidate& c) {
        return std::find(list.begin(), list.end(), state_.nodes[c.node].name) != list.end();
      });
      if (first - cands.begin() != static_cast<std::ptrdiff_t>(list.size())) return;
    }
    std::partial_sort(first, cands.begin() + job.nodes, cands.end());
    cands.resize(job.nodes);
    if (!best || latest(cands) < latest(*best)) best = std::move(cands);
  };
  // A gang with a required topology is reserved nodes of one block (eligible() admits
  // only nodes with the label).
  const std::string& required = job.nodes > 1 && job.constraints ? job.constraints->topology.required : kNoTopology;
  for (int k : keys) {
    std::vector<Candidate> cands;
    for (uint32_t n : state_.keys[k].nodes) {
      const Node& node = state_.nodes[n];
      if (!eligible(node, job)) continue;
      Mask usable = node.usable(*node.find_key(k));
      std::optional<Candidate> node_best;
      const Need need = need_on(node, job);
      auto consider = [&](Mask group) {
        Candidate c{now_ms_, kept(n, group) ? 0 : 1, masks::popcount(group & node.held), n, group};
        masks::for_each_slot(group, [&](int s) { c.free_at = std::max(c.free_at, card_free_at(node, s)); });
        c.free_at = reservation_bound(node, job, resources_free_at(n, need, c.free_at));
        if (!node_best || c < *node_best) node_best = c;
      };
      if (node.rule == api::GroupRule::any_subset) {
        std::vector<std::pair<int64_t, int>> by_time;
        for (int s : masks::slots(usable)) by_time.emplace_back(card_free_at(node, s), s);
        if (static_cast<int>(by_time.size()) < size) continue;
        std::sort(by_time.begin(), by_time.end());
        Mask group = 0;
        for (int i = 0; i < size; ++i) group |= Mask{1} << by_time[i].second;
        consider(group);
      } else {
        ClusterState::for_each_group(node, usable, size, consider);
      }
      if (node_best) cands.push_back(*node_best);
    }
    if (!required.empty()) {  // One block: the one whose nodes free soonest.
      std::map<std::string_view, std::vector<Candidate>> blocks;
      for (const Candidate& c : cands) blocks[*label_of(state_.nodes[c.node], required)].push_back(c);
      for (auto& [_, block] : blocks) consider(std::move(block));
    } else {
      consider(std::move(cands));
    }
  }
  if (!best) return;
  std::vector<std::pair<uint32_t, Mask>> groups;
  for (const Candidate& c : *best) groups.emplace_back(c.node, c.group);
  hold_reservation(job, groups, latest(*best), out);
}

void SchedulePass::hold_reservation(const PendingJob& job, const std::vector<std::pair<uint32_t, Mask>>& groups,
                                    int64_t start, ScheduleResult& out) {
  Reserved r;
  r.job_id = job.id;
  if (start != kNever) r.start_ms = start;
  Reservation shown{job.id, r.start_ms, {}};
  ClusterState::LastReservation last{job.id, {}};
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto [n, group] = groups[i];
    Node& node = state_.nodes[n];
    const Need need = need_on(node, job);
    last.groups.emplace_back(node.name, group);
    node.blocked |= group;
    node.cpus_blocked += need.cpus;
    node.memory_blocked += need.memory_mib;
    state_.refresh_fit(n);
    r.nodes.push_back(n);
    shown.allocations.push_back(allocation(Choice{n, group, need}, static_cast<int>(i)));
  }
  std::sort(r.nodes.begin(), r.nodes.end());
  reserved_ = std::move(r);
  state_.last_reservation = std::move(last);
  out.reservations.push_back(std::move(shown));
}

}  // namespace tessel::scheduler::detail
