#include "schedule_pass.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "pending_reasons.hpp"
#include "tessel/api/topology.hpp"

namespace tessel::scheduler::detail {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
const std::string kAnyModel = "*";  // Quotas over every model together.
const std::string kNoTopology;

int64_t add_seconds(int64_t now_ms, int64_t seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds > (kNever - now_ms) / 1000) return kNever;
  return now_ms + seconds * 1000;
}

// std::sort needs a strict weak order, which a NaN breaks: it sorts as 0.
double ordered(double x) { return std::isnan(x) ? 0.0 : x; }

uint32_t node_of(uint64_t entry) { return static_cast<uint32_t>(entry & 0xFFFFFFFFu); }

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

std::vector<uint32_t> SchedulePass::scheduling_order(const std::vector<PendingJob>& queue) {
  // One walk over the queue in its own order (memory in sequence): the sort keys, each
  // id's hash, and which ids occur more than once.
  const auto hash_of = std::hash<std::string_view>{};
  std::vector<SortKey>& keys = buffers_.keys;
  keys.clear();
  std::vector<size_t>& id_hash = buffers_.id_hash;
  id_hash.assign(queue.size(), 0);
  std::vector<bool>& repeated = buffers_.repeated;  // Its id occurs again in the queue.
  repeated.assign(queue.size(), false);
  HashSlots ids(buffers_.id_slots, queue.size());
  for (size_t i = 0; i < queue.size(); ++i) {
    const PendingJob& j = queue[i];
    const auto index = static_cast<uint32_t>(i);
    keys.push_back(SortKey{j.priority, j.within_guarantee, ordered(j.fair_share), ordered(j.user_usage), j.seq, index});
    id_hash[i] = hash_of(j.id);
    if (auto first = ids.insert(id_hash[i], index, [&](uint32_t other) { return queue[other].id == j.id; })) {
      repeated[*first] = true;
      repeated[i] = true;
    }
  }
  // Sorted as compact keys, not pointers: with 100,000 jobs a comparator that follows
  // pointers into the queue spends most of the sort on cache misses. The queue index
  // breaks the last tie (the same id twice), so the order is total and std::sort's
  // result is the stable one.
  std::sort(keys.begin(), keys.end(), [&](const SortKey& a, const SortKey& b) {
    if (auto c = a.compare(b); c != 0) return c < 0;
    if (int c = queue[a.index].id.compare(queue[b.index].id); c != 0) return c < 0;
    return a.index < b.index;
  });
  std::vector<uint32_t> order;
  order.reserve(queue.size());
  for (const SortKey& k : keys) order.push_back(k.index);
  return order;
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

std::optional<SchedulePass::Plan> SchedulePass::plan_gang(const PendingJob& job, const std::vector<int>& keys,
                                                          bool use_reserved) const {
  if (job.constraints == nullptr && state_.topology_levels.empty()) return plan_gang_anywhere(job, keys, use_reserved);
  const TopologyPlan topology = topology_plan(job, state_.topology_levels);
  for (std::string_view level : topology.keys)
    if (auto plan = plan_in_block(job, keys, use_reserved, level)) return plan;
  if (topology.required) return std::nullopt;
  return plan_gang_anywhere(job, keys, use_reserved);
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

std::optional<SchedulePass::Plan> SchedulePass::plan_in_block(const PendingJob& job, const std::vector<int>& keys,
                                                              bool use_reserved, std::string_view level) const {
  const auto blocks = state_.nodes_by_label.find(level);
  if (blocks == state_.nodes_by_label.end()) return std::nullopt;
  const int lg = masks::size_index(job.devices);
  const bool listed = lists_some(job);
  std::optional<std::pair<std::tuple<size_t, size_t, std::string_view>, Plan>> best;  // ((waste, size, value), plan)
  for (int k : keys) {
    Plan fixed;  // A short nodelist's nodes, which must share the block.
    std::vector<uint32_t> taken;
    if (listed && !take_listed(job, k, use_reserved, fixed, taken)) continue;
    const std::string* listed_value = nullptr;
    if (listed) {
      listed_value = label_of(state_.nodes[taken.front()], level);
      if (listed_value == nullptr || std::any_of(taken.begin(), taken.end(), [&](uint32_t n) {
            const std::string* v = label_of(state_.nodes[n], level);
            return v == nullptr || *v != *listed_value;
          }))
        continue;
    }
    // Each block's choices, best fits first; reserved cards after the free ones.
    std::map<std::string_view, std::vector<Choice>> by_block;
    auto add = [&](const Choice& c) {
      const std::string* value = label_of(state_.nodes[c.node], level);
      if (value == nullptr || (listed_value != nullptr && *value != *listed_value)) return;
      if (std::find(taken.begin(), taken.end(), c.node) != taken.end()) return;
      by_block[*value].push_back(c);
      taken.push_back(c.node);
    };
    for (uint64_t entry : state_.keys[k].fit[lg]) {
      const Node& node = state_.nodes[node_of(entry)];
      if (!eligible(node, job) || !fits(node, need_on(node, job), !use_reserved)) continue;
      add(Choice{node_of(entry), ClusterState::pick_group(node, node.free_cards(*node.find_key(k), true), job.devices),
                 need_on(node, job)});
    }
    if (use_reserved && reserved_)
      for (uint32_t n : reserved_->nodes)
        if (std::find(taken.begin(), taken.end(), n) == taken.end())
          if (auto c = choice_on(job, n, k, /*honour_blocked=*/false)) add(c->second);
    const size_t need = static_cast<size_t>(job.nodes) - fixed.size();
    for (auto& [value, choices] : by_block) {
      if (choices.size() < need) continue;
      const auto size = blocks->second.find(value);
      std::tuple<size_t, size_t, std::string_view> rank{choices.size() - need,
                                                        size == blocks->second.end() ? 0 : size->second.size(), value};
      if (best && !(rank < best->first)) continue;
      Plan plan = fixed;
      plan.insert(plan.end(), choices.begin(), choices.begin() + static_cast<std::ptrdiff_t>(need));
      best.emplace(rank, std::move(plan));
    }
  }
  if (!best) return std::nullopt;
  return std::move(best->second);
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
  if (job.nodes > 1 && job.devices > 0 && job.constraints && !job.constraints->topology.required.empty()) {
    if (std::string why = topology_reason(job, keys, waiting); !why.empty()) return why;
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

std::string SchedulePass::topology_reason(const PendingJob& job, const std::vector<int>& keys, bool* waiting) const {
  const std::string& level = job.constraints->topology.required;
  // Per block (value): nodes able to hold the job at all, and with the cards free now.
  std::map<std::string_view, std::pair<int, int>> blocks;
  for (int k : keys) {
    for (uint32_t n : admitted_now_->nodes) {
      const Node& node = state_.nodes[n];
      const NodeKey* nk = node.find_key(k);
      if (!node.in_key_nodes || nk == nullptr || !eligible(node, job)) continue;
      if (ClusterState::fit_class(node, node.usable(*nk), job.devices) == kNoFit) continue;
      auto& [capable, free] = blocks[*label_of(node, level)];
      ++capable;
      if (ClusterState::fit_class(node, node.free_cards(*nk, true), job.devices) != kNoFit &&
          fits(node, need_on(node, job), true))
        ++free;
    }
  }
  std::pair<std::string_view, int> most_capable{"", 0}, most_free{"", 0};
  for (const auto& [value, counts] : blocks) {
    if (counts.first > most_capable.second) most_capable = {value, counts.first};
    if (counts.second > most_free.second) most_free = {value, counts.second};
  }
  if (most_capable.second < job.nodes)
    return reasons::topology_too_small(job.nodes, level, std::string(most_capable.first), most_capable.second);
  *waiting = true;
  return reasons::topology_waiting(job.nodes, level, std::string(most_free.first), most_free.second);
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
