#include "schedule_pass.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "pending_reasons.hpp"
#include "schedule_pass_util.hpp"

namespace tessel::scheduler::detail {

using pass::add_seconds;
using pass::node_of;

namespace {

const std::string kAnyModel = "*";  // Quotas over every model together.

}  // namespace

SchedulePass::SchedulePass(ClusterState& state, PassBuffers& buffers, int64_t now_ms,
                           std::vector<ProjectLimits>* limits)
    : state_(state), buffers_(buffers), now_ms_(now_ms), limits_(limits), previous_(std::move(state.last_reservation)) {
  state_.last_reservation.reset();  // reserve() sets it again.
}

SchedulePass::~SchedulePass() {
  if (!reserved_) return;
  for (uint32_t n : reserved_->nodes) {
    state_.nodes[n].blocked = 0;
    state_.nodes[n].cpus_blocked = 0;
    state_.nodes[n].memory_blocked = 0;
    state_.refresh_fit(n);
  }
}

std::optional<std::string> SchedulePass::over_limit_asked(const PendingJob& job) const {
  const int64_t cards = int64_t{job.devices} * job.nodes;
  auto why = over_limit(job, kAnyModel, cards);
  if (!why && !job.model.empty()) why = over_limit(job, job.model, cards);
  return why;
}

ScheduleResult SchedulePass::run(const std::vector<PendingJob>& queue) {
  ScheduleResult out;
  out.order = scheduling_order(queue);
  const std::vector<size_t>& id_hash = buffers_.id_hash;
  const std::vector<bool>& repeated = buffers_.repeated;
  const auto hash_of = std::hash<std::string_view>{};
  // Ids that hold cards already. With a queue longer than the held jobs, a hash test
  // first (one table per pass, O(held jobs)); with a short one (a pass after each
  // submission), only the allocator's own lookup.
  const bool held_table = queue.size() > state_.jobs.size();
  HashSlots held(buffers_.held_slots, held_table ? state_.jobs.size() : 0);
  if (held_table)
    for (uint32_t h = 0; h < state_.jobs.size(); ++h)
      if (state_.jobs[h].live) held.insert(hash_of(state_.jobs[h].id), h, [](uint32_t) { return false; });
  std::unordered_set<std::string_view>
      seen;  // Repeated ids only (views of the queue's): the first entry's outcome stands.
  out.pending_reasons.reserve(queue.size());
  auto pend = [&](const PendingJob& job, uint32_t text) {
    out.pending_reasons.add(job.id, static_cast<uint32_t>(&job - queue.data()), text);
    if (job.constraints != nullptr && !job.constraints->reservation.empty()) estimate_window(job, out);
  };
  auto pend_for = [&](const PendingJob& job, const std::string& why) { pend(job, out.pending_reasons.intern(why)); };
  constexpr size_t kAhead = 8;  // Jobs in scheduling order are scattered in memory: fetch ahead.
  for (size_t pos = 0; pos < out.order.size(); ++pos) {
    if (pos + kAhead < out.order.size()) {
      const char* ahead = reinterpret_cast<const char*>(&queue[out.order[pos + kAhead]]);
      for (size_t line = 0; line < sizeof(PendingJob); line += 64) __builtin_prefetch(ahead + line);
    }
    const uint32_t index = out.order[pos];
    const PendingJob& job = queue[index];
    if (repeated[index] && !seen.insert(job.id).second) continue;
    if (job.devices != 0 && masks::size_index(job.devices) < 0) {
      pend_for(job, reasons::invalid_devices(job.devices));
      continue;
    }
    if (job.nodes < 1) {
      pend_for(job, reasons::invalid_nodes(job.nodes));
      continue;
    }
    if ((!held_table || held.has_hash(id_hash[index])) && state_.find_job(job.id)) {
      pend_for(job, reasons::already_holds_cards());
      continue;
    }
    const std::vector<int>& keys = keys_of(job);
    const bool limited = limits_ && job.project >= 0 && job.project < static_cast<int32_t>(limits_->size());
    if (auto why = limited && job.devices > 0 ? over_limit_asked(job) : std::nullopt) {
      pend_for(job, *why);
      continue;
    }

    bool use_reserved = may_use_reserved(job);
    const RecentConstraints* constrained = job.constraints ? &recent(job) : nullptr;
    admitted_now_ = constrained ? constrained->admitted : nullptr;
    const FailKey fail_key = fail_key_of(job, use_reserved, constrained ? constrained->same : nullptr);
    // With reserved nodes a job's time limit decides where it may start: such jobs
    // share no cached failures or reasons (jobs without one are all alike there).
    const bool uncached = state_.reserved_nodes > 0 && job.time_limit_s.has_value();
    auto known = uncached ? failed_.end() : failed_.find(fail_key);
    if (known == failed_.end() || job.nodes < known->second) {
      if (auto plan = job.devices == 0 ? plan_without_cards(job, keys) : plan_cards(job, keys, use_reserved)) {
        if (limited) {  // The placement's own models (a job without a model may take any).
          auto taking = cards_by_model(*plan);
          if (auto why = over_limit(job, taking)) {
            pend_for(job, *why);
            continue;
          }
          for (const auto& [model, n] : taking) (*limits_)[static_cast<size_t>(job.project)].held[model] += n;
        }
        out.placed.push_back(apply(job, *plan));
        continue;
      }
      if (!uncached) {
        int& fewest = failed_.emplace(fail_key, job.nodes).first->second;
        fewest = std::min(fewest, job.nodes);
      }
    }

    auto reason_key = std::tuple_cat(fail_key, std::make_tuple(job.nodes));
    if (auto it = uncached ? reason_cache_.end() : reason_cache_.find(reason_key); it != reason_cache_.end()) {
      pend(job, it->second);
      continue;
    }
    bool waiting = false;
    std::string why = reason_for(job, keys, &waiting);
    if (waiting && reserved_ && !use_reserved && plan_cards(job, keys, /*use_reserved=*/true)) {
      why = reasons::waiting_behind_reservation(reserved_->job_id);
    }
    const uint32_t text = out.pending_reasons.intern(why);
    pend(job, text);
    if (waiting && !reserved_) {
      reserve(job, keys, out);
      // The views changed: reserved cards are now blocked.
      failed_.clear();
      reason_cache_.clear();
    } else if (!uncached) {
      reason_cache_.emplace(reason_key, text);
    }
  }
  return out;
}

void SchedulePass::estimate_window(const PendingJob& job, ScheduleResult& out) {
  const std::string& name = job.constraints->reservation;
  auto [it, fresh] = window_starts_.try_emplace(name, pass::kNever);
  if (fresh && state_.reserved_nodes > 0) {
    for (const Node& node : state_.nodes) {
      if (node.reserved == nullptr) continue;
      for (const ReservationWindow& w : node.reserved->windows)
        if (w.name == name && w.start_ms > now_ms_) it->second = std::min(it->second, w.start_ms);
    }
  }
  if (it->second != pass::kNever) out.reservations.push_back(Reservation{job.id, it->second, {}});
}

const std::vector<int>& SchedulePass::keys_of(const PendingJob& job) {
  auto [it, fresh] = keys_cache_.try_emplace({job.vendor ? static_cast<int>(*job.vendor) : -1, job.model});
  if (!fresh) return it->second;
  std::vector<int>& keys = it->second;
  for (api::Vendor v : api::supported_vendors()) {
    if (job.vendor && *job.vendor != v) continue;
    if (auto k = state_.find_key(v, job.model)) keys.push_back(*k);
  }
  return keys;
}

std::optional<SchedulePass::Plan> SchedulePass::plan_without_cards(const PendingJob& job,
                                                                   const std::vector<int>& keys) const {
  // A gang of CPU-only ranks keeps to one block as a gang with cards does.
  if (job.nodes > 1 && (job.constraints != nullptr || !state_.topology_levels.empty())) {
    const TopologyPlan topology = topology_plan(job, state_.topology_levels);
    for (std::string_view level : topology.keys)
      if (auto plan = plan_in_block(job, keys, may_use_reserved(job), level)) return plan;
    if (topology.required) return std::nullopt;
  }
  for (int k : keys) {
    const auto& nodes = state_.keys[k].nodes;
    if (static_cast<int>(nodes.size()) < job.nodes) continue;
    Plan plan;
    std::vector<uint32_t> taken;
    const bool listed = lists_some(job);
    if (listed && !take_listed(job, k, may_use_reserved(job), plan, taken)) continue;
    for (uint32_t n : nodes) {
      if (listed && std::find(taken.begin(), taken.end(), n) != taken.end()) continue;
      const Node& node = state_.nodes[n];
      const Need need = need_on(node, job);
      if (!eligible(node, job) || !fits(node, need, /*honour_blocked=*/!may_use_reserved(job))) continue;
      plan.push_back(Choice{n, 0, need});
      if (static_cast<int>(plan.size()) == job.nodes) return plan;
    }
  }
  return std::nullopt;
}

std::optional<SchedulePass::Plan> SchedulePass::plan_cards(const PendingJob& job, const std::vector<int>& keys,
                                                           bool use_reserved) const {
  const int lg = masks::size_index(job.devices);
  const int size = job.devices;
  auto from_index = [&](uint32_t n, int k) {
    const Node& node = state_.nodes[n];
    return Choice{n, ClusterState::pick_group(node, node.free_cards(*node.find_key(k), true), size),
                  need_on(node, job)};
  };
  // A node of the index the job may take: eligible, with the CPUs and memory it needs
  // (what the pass reserved only for a job that may use reserved cards).
  auto usable = [&](uint64_t entry) {
    const Node& node = state_.nodes[node_of(entry)];
    return eligible(node, job) && fits(node, need_on(node, job), !use_reserved);
  };
  // A reserved node's best group when reserved cards may be used, or nullopt.
  auto from_reserved = [&](uint32_t n, int k) { return choice_on(job, n, k, /*honour_blocked=*/false); };

  if (job.nodes == 1 && job.constraints && !job.constraints->nodelist.empty()) {
    // The one node it may use: looked at directly, not found by a scan of the index.
    std::optional<std::pair<uint64_t, Choice>> pick;
    const auto n = state_.find_node(job.constraints->nodelist.front());
    for (int k : keys) {
      if (!n) break;
      auto c = choice_on(job, *n, k, /*honour_blocked=*/true);
      if (!c && use_reserved) c = choice_on(job, *n, k, /*honour_blocked=*/false);
      if (c && (!pick || c->first < pick->first)) pick = c;
    }
    if (pick) return Plan{pick->second};
    return std::nullopt;
  }
  if (job.nodes == 1) {
    std::optional<std::pair<uint64_t, int>> best;  // (entry, key)
    for (int k : keys) {
      const auto& fit = state_.keys[k].fit[lg];
      auto it = std::find_if(fit.begin(), fit.end(), usable);  // Best fits first: the first usable one.
      if (it != fit.end() && (!best || *it < best->first)) best = std::make_pair(*it, k);
    }
    if (best) return Plan{from_index(node_of(best->first), best->second)};
    if (!use_reserved || !reserved_) return std::nullopt;
    std::optional<std::pair<uint64_t, Choice>> pick;
    for (int k : keys)
      for (uint32_t n : reserved_->nodes)
        if (auto c = from_reserved(n, k); c && (!pick || c->first < pick->first)) pick = c;
    if (pick) return Plan{pick->second};
    return std::nullopt;
  }

  return plan_gang(job, keys, use_reserved);
}

// Gangs: distinct nodes of one key (so one vendor), best fits first.
std::optional<SchedulePass::Plan> SchedulePass::plan_gang_anywhere(const PendingJob& job, const std::vector<int>& keys,
                                                                   bool use_reserved) const {
  const int lg = masks::size_index(job.devices);
  auto from_index = [&](uint32_t n, int k) {
    const Node& node = state_.nodes[n];
    return Choice{n, ClusterState::pick_group(node, node.free_cards(*node.find_key(k), true), job.devices),
                  need_on(node, job)};
  };
  auto usable = [&](uint64_t entry) {
    const Node& node = state_.nodes[node_of(entry)];
    return eligible(node, job) && fits(node, need_on(node, job), !use_reserved);
  };
  auto from_reserved = [&](uint32_t n, int k) { return choice_on(job, n, k, /*honour_blocked=*/false); };
  const bool listed = lists_some(job);
  for (int k : keys) {
    Plan plan;
    std::vector<uint32_t> taken;
    if (listed && !take_listed(job, k, use_reserved, plan, taken)) continue;
    for (uint64_t entry : state_.keys[k].fit[lg]) {
      if (!usable(entry)) continue;
      if (listed && std::find(taken.begin(), taken.end(), node_of(entry)) != taken.end()) continue;
      plan.push_back(from_index(node_of(entry), k));
      taken.push_back(node_of(entry));
      if (static_cast<int>(plan.size()) == job.nodes) return plan;
    }
    if (!use_reserved || !reserved_) continue;
    std::vector<std::pair<uint64_t, Choice>> extra;
    for (uint32_t n : reserved_->nodes) {
      if (std::find(taken.begin(), taken.end(), n) != taken.end()) continue;
      if (auto c = from_reserved(n, k)) extra.push_back(*c);
    }
    std::sort(extra.begin(), extra.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [entry, choice] : extra) {
      plan.push_back(choice);
      if (static_cast<int>(plan.size()) == job.nodes) return plan;
    }
  }
  return std::nullopt;
}

std::optional<std::pair<uint64_t, SchedulePass::Choice>> SchedulePass::choice_on(const PendingJob& job, uint32_t n,
                                                                                 int k, bool honour_blocked) const {
  const Node& node = state_.nodes[n];
  const NodeKey* nk = node.find_key(k);
  if (!node.in_key_nodes || nk == nullptr || !eligible(node, job)) return std::nullopt;
  const Need need = need_on(node, job);
  if (!fits(node, need, honour_blocked)) return std::nullopt;
  if (job.devices == 0) return std::make_pair(uint64_t{n}, Choice{n, 0, need});
  const Mask free = node.free_cards(*nk, honour_blocked);
  const uint32_t cls = ClusterState::fit_class(node, free, job.devices);
  if (cls == kNoFit) return std::nullopt;
  return std::make_pair((uint64_t{cls} << 32) | n, Choice{n, ClusterState::pick_group(node, free, job.devices), need});
}

bool SchedulePass::take_listed(const PendingJob& job, int k, bool use_reserved, Plan& plan,
                               std::vector<uint32_t>& taken) const {
  for (const std::string& name : job.constraints->nodelist) {
    auto n = state_.find_node(name);
    if (!n) return false;
    auto c = choice_on(job, *n, k, /*honour_blocked=*/true);
    if (!c && use_reserved) c = choice_on(job, *n, k, /*honour_blocked=*/false);
    if (!c) return false;
    plan.push_back(c->second);
    taken.push_back(*n);
  }
  return true;
}

bool SchedulePass::may_use_reserved(const PendingJob& job) const {
  if (!reserved_ || !reserved_->start_ms || !job.time_limit_s) return false;
  return add_seconds(now_ms_, *job.time_limit_s) <= *reserved_->start_ms;
}

bool SchedulePass::fits(const Node& node, const Need& need, bool honour_blocked) {
  if (node.cpus > 0 && need.cpus > 0 &&
      need.cpus > node.cpus - node.cpus_used - (honour_blocked ? node.cpus_blocked : 0))
    return false;
  return node.memory_mib <= 0 || need.memory_mib <= 0 ||
         need.memory_mib <= node.memory_mib - node.memory_used - (honour_blocked ? node.memory_blocked : 0);
}

bool SchedulePass::ever_fits(const Node& node, const Need& need) {
  return (node.cpus <= 0 || need.cpus <= node.cpus) && (node.memory_mib <= 0 || need.memory_mib <= node.memory_mib);
}

const SchedulePass::Admitted& SchedulePass::admitted(const api::NodeConstraints* same, int nodes) {
  auto [it, fresh] = admitted_.try_emplace(std::make_pair(same, nodes));
  Admitted& a = it->second;
  if (!fresh) return a;
  const api::NodeConstraints& c = *same;
  a.bit.assign(state_.nodes.size(), false);
  auto take = [&](uint32_t n) {
    if (a.bit[n] || !admits(state_.nodes[n], c, nodes)) return;
    a.bit[n] = true;
    a.nodes.push_back(n);
  };
  if (!c.node_selector.empty()) {  // The nodes of the selector's rarest pair, each checked for the rest.
    const std::vector<uint32_t>* fewest = nullptr;
    for (const auto& [key, value] : c.node_selector) {
      auto k = state_.nodes_by_label.find(key);
      auto v = k == state_.nodes_by_label.end() ? decltype(k->second.end()){} : k->second.find(value);
      if (k == state_.nodes_by_label.end() || v == k->second.end()) return a;  // No node has it.
      if (fewest == nullptr || v->second.size() < fewest->size()) fewest = &v->second;
    }
    for (uint32_t n : *fewest) take(n);
  } else if (!c.nodelist.empty() && static_cast<int>(c.nodelist.size()) >= nodes) {
    for (const std::string& name : c.nodelist)
      if (auto n = state_.find_node(name)) take(*n);
    std::sort(a.nodes.begin(), a.nodes.end());
  } else {
    for (uint32_t n = 0; n < state_.nodes.size(); ++n) take(n);
  }
  return a;
}

std::map<std::string, int64_t> SchedulePass::cards_by_model(const Plan& plan) const {
  std::map<std::string, int64_t> out;
  for (const Choice& c : plan) {
    if (c.group == 0) continue;
    out["*"] += masks::popcount(c.group);
    for (const NodeKey& k : state_.nodes[c.node].keys) {
      const std::string& model = state_.keys[k.key].model;
      if (model.empty()) continue;  // The vendor-wide key.
      if (int n = masks::popcount(c.group & k.model_mask)) out[model] += n;
    }
  }
  return out;
}

std::optional<std::string> SchedulePass::over_limit(const PendingJob& job,
                                                    const std::map<std::string, int64_t>& cards) const {
  for (const auto& [model, n] : cards)
    if (auto why = over_limit(job, model, n)) return why;
  return std::nullopt;
}

std::optional<std::string> SchedulePass::over_limit(const PendingJob& job, const std::string& model, int64_t n) const {
  const ProjectLimits& lim = (*limits_)[static_cast<size_t>(job.project)];
  auto h = lim.held.find(model);
  const int64_t after = (h == lim.held.end() ? 0 : h->second) + n;
  if (auto m = lim.max.find(model); m != lim.max.end() && after > m->second)
    return reasons::project_at_max(lim.name, m->second, model);
  if (job.preemptible) return std::nullopt;
  if (auto g = lim.guaranteed.find(model); g != lim.guaranteed.end() && g->second > 0 && after > g->second)
    return reasons::project_at_guarantee(lim.name, g->second, model);
  return std::nullopt;
}

api::Allocation SchedulePass::allocation(const Choice& c, int rank) const {
  const Node& node = state_.nodes[c.node];
  api::Allocation a;
  a.node = node.name;
  a.rank = rank;
  a.cpus = c.need.cpus;
  a.memory_mib = c.need.memory_mib;
  masks::for_each_slot(c.group, [&](int s) {
    a.module_ids.push_back(s);
    a.indices.push_back(node.index[s]);
  });
  return a;
}

Placement SchedulePass::apply(const PendingJob& job, const Plan& plan) {
  Placement p;
  p.job_id = job.id;
  const bool holds = std::any_of(plan.begin(), plan.end(), [](const Choice& c) {
    return c.group != 0 || c.need.cpus > 0 || c.need.memory_mib > 0;
  });
  if (holds) {
    int32_t h = state_.job_handle(job.id);
    if (job.time_limit_s) state_.jobs[h].end_ms = add_seconds(now_ms_, *job.time_limit_s);
    for (const Choice& c : plan) {
      if (c.group != 0) state_.hold_cards(h, c.node, c.group);
      state_.hold_share(h, c.node, c.need.cpus, c.need.memory_mib);
    }
  }
  for (size_t i = 0; i < plan.size(); ++i) p.allocations.push_back(allocation(plan[i], static_cast<int>(i)));
  return p;
}

}  // namespace tessel::scheduler::detail
