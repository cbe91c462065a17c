// The preemption policy (tessel/scheduler/preemption.hpp) over the allocator's
// ClusterState: reads holds and indexes, changes nothing.
#include "preemption.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "node_filter.hpp"
#include "tessel/api/topology.hpp"
#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {
namespace {

const std::string kAnyModel = "*";
// Gangs with at most this many candidate victims on the job's nodes are planned by
// trying every set of victims, smallest first (2^12 sets); past it, greedily.
constexpr size_t kExactCandidates = 12;

int64_t value_or_zero(const std::map<std::string, int64_t>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

struct Candidate {
  const RunningJob* job = nullptr;
  std::vector<std::pair<uint32_t, Mask>> cards;  // By node.
  std::vector<Share> shares;                     // CPUs and memory, by node.
  std::map<std::string, int64_t> by_model;       // And "*".
};

// Whether `node` has `need`'s CPUs and memory once `freed` is given back (a node that
// reports none counts none).
bool has_room(const Node& node, const Need& need, const Share& freed) {
  if (node.cpus > 0 && need.cpus > 0 && need.cpus > node.cpus - node.cpus_used + freed.cpus) return false;
  return node.memory_mib <= 0 || need.memory_mib <= 0 ||
         need.memory_mib <= node.memory_mib - node.memory_used + freed.memory_mib;
}

void add_share(Share& to, const Share& s, int sign) {
  to.cpus += sign * s.cpus;
  to.memory_mib += sign * s.memory_mib;
}

// A set of victims (indices into the candidates) and where the job would go.
struct Choice {
  std::vector<size_t> victims;
  std::vector<std::pair<uint32_t, Mask>> groups;  // Node and group, rank order.
};

class Planner {
 public:
  Planner(const ClusterState& st, const PreemptionRequest& req) : st_(st), req_(req), job_(*req.job) {}

  PreemptionOutcome run() {
    PreemptionOutcome out;
    if (!within_guarantee()) return out;
    collect_candidates(out);
    std::optional<Choice> best;
    for (int k : keys()) {
      for (const std::string* block : blocks()) {
        block_ = block;
        std::optional<Choice> c = job_.nodes == 1 ? plan_single(k) : plan_gang(k);
        if (fits_now_) return PreemptionOutcome{};  // Waiting for nothing: the pass places it.
        if (c && (!best || better(*c, *best))) best = std::move(c);
      }
    }
    if (!best) return out;
    PreemptionPlan plan;
    std::sort(best->victims.begin(), best->victims.end());  // Candidates are newest first.
    for (size_t v : best->victims) plan.victims.push_back(cands_[v].job->job_id);
    for (size_t i = 0; i < best->groups.size(); ++i) {
      const Node& node = st_.nodes[best->groups[i].first];
      api::Allocation a;
      a.node = node.name;
      a.rank = static_cast<int>(i);
      masks::for_each_slot(best->groups[i].second, [&](int s) {
        a.module_ids.push_back(s);
        a.indices.push_back(node.index[s]);
      });
      // What the job takes there beside the cards: room() checked the node has it once
      // the victims are gone.
      const Need need = need_on(node, job_.devices, job_.cpus, job_.memory_mib);
      a.cpus = need.cpus;
      a.memory_mib = need.memory_mib;
      plan.allocations.push_back(std::move(a));
    }
    return PreemptionOutcome{std::move(plan), std::nullopt};
  }

 private:
  const std::vector<ProjectLimits>& limits() const { return *req_.limits; }

  bool within_guarantee() const {
    if (!req_.limits || job_.devices <= 0 || job_.nodes < 1 || masks::size_index(job_.devices) < 0) return false;
    if (job_.project < 0 || job_.project >= static_cast<int32_t>(limits().size())) return false;
    const ProjectLimits& own = limits()[static_cast<size_t>(job_.project)];
    const std::string& model = job_.model.empty() ? kAnyModel : job_.model;
    const int64_t cards = int64_t{job_.devices} * job_.nodes;
    auto g = own.guaranteed.find(model);
    if (g == own.guaranteed.end() || value_or_zero(own.held, model) + cards > g->second) return false;
    for (const std::string& m : {model, kAnyModel}) {
      auto max = own.max.find(m);
      if (max != own.max.end() && value_or_zero(own.held, m) + cards > max->second) return false;
    }
    return true;
  }

  // A gang with a required topology (issue 32) is planned in each block of its key in
  // turn (the block's value); any other job once, on any node (null).
  std::vector<const std::string*> blocks() const {
    if (job_.nodes < 2 || !job_.constraints || job_.constraints->topology.required.empty()) return {nullptr};
    std::vector<const std::string*> out;
    auto level = st_.nodes_by_label.find(job_.constraints->topology.required);
    if (level != st_.nodes_by_label.end())
      for (const auto& [value, _] : level->second) out.push_back(&value);
    return out;
  }
  bool in_block(const Node& node) const {
    if (block_ == nullptr) return true;
    const std::string* value = label_of(node, job_.constraints->topology.required);
    return value != nullptr && *value == *block_;
  }

  std::vector<int> keys() const {
    std::vector<int> out;
    for (api::Vendor v : api::supported_vendors()) {
      if (job_.vendor && *job_.vendor != v) continue;
      if (auto k = st_.find_key(v, job_.model)) out.push_back(*k);
    }
    return out;
  }

  void collect_candidates(PreemptionOutcome& out) {
    for (const RunningJob& r : req_.running) {
      if (!r.preemptible || r.started_at_ms <= 0) continue;
      if (r.project >= 0 && r.project == job_.project) continue;
      if (r.project >= static_cast<int32_t>(limits().size())) continue;
      auto h = st_.find_job(r.job_id);
      if (!h) continue;
      if (req_.now_ms - r.started_at_ms < req_.min_runtime_ms) {
        const int64_t at = r.started_at_ms + req_.min_runtime_ms;
        if (!out.retry_at_ms || at < *out.retry_at_ms) out.retry_at_ms = at;
        continue;
      }
      Candidate c;
      c.job = &r;
      c.cards = st_.jobs[*h].cards;
      c.shares = st_.jobs[*h].shares;
      if (r.project < 0) {  // No guarantee to keep: its cards by model are never asked for.
        cands_.push_back(std::move(c));
        continue;
      }
      for (const auto& [n, m] : c.cards) {
        c.by_model[kAnyModel] += masks::popcount(m);
        for (const NodeKey& k : st_.nodes[n].keys) {
          const std::string& model = st_.keys[k.key].model;
          if (model.empty()) continue;  // The vendor-wide key.
          if (int cnt = masks::popcount(m & k.model_mask)) c.by_model[model] += cnt;
        }
      }
      cands_.push_back(std::move(c));
    }
    // Newest first; the id breaks ties so plans do not depend on the input's order.
    std::sort(cands_.begin(), cands_.end(), [](const Candidate& a, const Candidate& b) {
      if (a.job->started_at_ms != b.job->started_at_ms) return a.job->started_at_ms > b.job->started_at_ms;
      return a.job->job_id < b.job->job_id;
    });
    for (size_t i = 0; i < cands_.size(); ++i) index_[st_.find_job(cands_[i].job->job_id).value()] = i;
  }

  // Whether every victim's project keeps at least its guarantee once they are gone.
  bool keeps_guarantees(const std::vector<size_t>& victims) const {
    if (std::all_of(victims.begin(), victims.end(), [&](size_t v) { return cands_[v].job->project < 0; })) return true;
    std::map<int32_t, std::map<std::string, int64_t>> removed;
    for (size_t v : victims) {
      const int32_t p = cands_[v].job->project;
      if (p < 0) continue;
      for (const auto& [model, n] : cands_[v].by_model) removed[p][model] += n;
    }
    for (const auto& [p, by_model] : removed) {
      const ProjectLimits& lim = limits()[static_cast<size_t>(p)];
      for (const auto& [model, g] : lim.guaranteed)
        if (value_or_zero(lim.held, model) - value_or_zero(by_model, model) < g) return false;
    }
    return true;
  }

  // Fewer victims first; then the set whose oldest victim started latest, and so on.
  bool better(const Choice& a, const Choice& b) const {
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    auto starts = [&](const Choice& c) {
      std::vector<int64_t> s;
      for (size_t v : c.victims) s.push_back(cands_[v].job->started_at_ms);
      std::sort(s.begin(), s.end());
      return s;
    };
    return starts(a) > starts(b);
  }

  // Whether node `n` has the job's CPUs and memory once `victims` are gone.
  bool room(uint32_t n, const std::vector<size_t>& victims) const {
    Share freed;
    for (size_t v : victims)
      for (const Share& s : cands_[v].shares)
        if (s.node == n) add_share(freed, s, 1);
    const Node& node = st_.nodes[n];
    return has_room(node, need_on(node, job_.devices, job_.cpus, job_.memory_mib), freed);
  }

  Mask victim_cards_on(const std::vector<size_t>& victims, uint32_t n) const {
    Mask m = 0;
    for (size_t v : victims)
      for (const auto& [node, cards] : cands_[v].cards)
        if (node == n) m |= cards;
    return m;
  }

  // Single-node jobs: every node and valid group, each with the victims holding it.
  std::optional<Choice> plan_single(int k) {
    std::optional<Choice> best;
    for (uint32_t n : st_.keys[k].nodes) {
      const Node& node = st_.nodes[n];
      const NodeKey* nk = node.find_key(k);
      if (nk == nullptr || !eligible(node, job_)) continue;  // Never stops jobs where it could not run.
      const Mask usable = node.usable(*nk), free = usable & ~node.held;
      if (ClusterState::fit_class(node, free, job_.devices) != kNoFit && room(n, {})) {
        fits_now_ = true;
        return std::nullopt;
      }
      auto consider = [&](Choice c) {
        if (c.victims.empty() || (best && c.victims.size() > best->victims.size())) return;
        if (!keeps_guarantees(c.victims)) return;
        if (!best || better(c, *best)) best = std::move(c);
      };
      if (node.rule == api::GroupRule::any_subset) {
        if (Choice c = any_subset_choice(n, usable, free); room(n, c.victims)) consider(std::move(c));
        continue;
      }
      ClusterState::for_each_group(node, usable, job_.devices, [&](Mask group) {
        Choice c;
        bool blocked = false;
        masks::for_each_slot(group & node.held, [&](int s) {
          auto it = index_.find(node.owner[s]);
          if (it == index_.end()) {
            blocked = true;  // Held by a job (or fence) that may not be preempted.
          } else if (std::find(c.victims.begin(), c.victims.end(), it->second) == c.victims.end()) {
            c.victims.push_back(it->second);
          }
        });
        if (blocked || !room(n, c.victims)) return;
        c.groups.emplace_back(n, group);
        consider(std::move(c));
      });
    }
    return best;
  }

  // Any subset is a valid group: the victims holding the most cards here first.
  Choice any_subset_choice(uint32_t n, Mask usable, Mask free) const {
    const Node& node = st_.nodes[n];
    std::map<size_t, Mask> held_here;
    masks::for_each_slot(usable & node.held, [&](int s) {
      auto it = index_.find(node.owner[s]);
      if (it != index_.end()) held_here[it->second] |= Mask{1} << s;
    });
    std::vector<std::pair<size_t, Mask>> order(held_here.begin(), held_here.end());
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return masks::popcount(a.second) > masks::popcount(b.second);  // Ties: newest first (index order).
    });
    Choice c;
    Mask group = free;
    for (const auto& [v, m] : order) {
      if (masks::popcount(group) >= job_.devices) break;
      c.victims.push_back(v);
      group |= m;
    }
    if (masks::popcount(group) < job_.devices) return Choice{};
    // The free cards, then the victims' (in the order they were taken).
    Mask pick = masks::lowest_bits(free, std::min(masks::popcount(free), job_.devices));
    for (size_t v : c.victims) {
      const Mask more = held_here[v];
      const int need = job_.devices - masks::popcount(pick);
      if (need <= 0) break;
      pick |= masks::lowest_bits(more, std::min(masks::popcount(more), need));
    }
    c.groups.emplace_back(n, pick);
    return c;
  }

  // The nodes where a candidate holds cards, CPUs or memory.
  static std::vector<uint32_t> nodes_of(const Candidate& c) {
    std::vector<uint32_t> out;
    for (const auto& [n, _] : c.cards) out.push_back(n);
    for (const Share& s : c.shares)
      if (std::find(out.begin(), out.end(), s.node) == out.end()) out.push_back(s.node);
    return out;
  }

  // Gangs: distinct nodes of one key, each with a free group once the victims are gone.
  // plan_gang() with too many candidates to try every set. `base_fit`: the nodes that
  // fit without victims; `touched_set`: the nodes that do not.
  // `listed`: nodes of a short nodelist that do not fit without victims (they must once
  // the victims are gone).
  std::optional<Choice> greedy_gang(int k, int base_fit, const std::unordered_set<uint32_t>& touched_set,
                                    const std::vector<size_t>& relevant, const std::vector<uint32_t>& listed) {
    // Newest first until the job fits, then drop (oldest first) each victim not
    // needed. The victims' cards by node and the count of nodes that fit with them
    // are kept up to date, so each step costs the victim's own nodes.
    std::unordered_map<uint32_t, Mask> extra;
    std::unordered_map<uint32_t, Share> extra_share;
    int fit = 0;
    auto node_fits = [&](uint32_t n) {
      const Node& node = st_.nodes[n];
      const Mask usable = node.usable(*node.find_key(k));
      auto e = extra.find(n);
      const Mask freed = e == extra.end() ? 0 : e->second;
      return ClusterState::fit_class(node, (usable & ~node.held) | (usable & freed), job_.devices) != kNoFit &&
             has_room(node, need_on(node, job_.devices, job_.cpus, job_.memory_mib), extra_share[n]);
    };
    auto release = [&](size_t v, bool gone) {
      for (uint32_t n : nodes_of(cands_[v])) {
        if (!touched_set.count(n)) continue;
        const bool before = node_fits(n);
        for (const auto& [cn, m] : cands_[v].cards)
          if (cn == n) extra[n] = gone ? (extra[n] | m) : (extra[n] & ~m);
        for (const Share& sh : cands_[v].shares)
          if (sh.node == n) add_share(extra_share[n], sh, gone ? 1 : -1);
        fit += static_cast<int>(node_fits(n)) - static_cast<int>(before);
      }
    };
    auto enough = [&] { return base_fit + fit >= job_.nodes && std::all_of(listed.begin(), listed.end(), node_fits); };
    Choice c;
    for (size_t v : relevant) {
      c.victims.push_back(v);
      if (!keeps_guarantees(c.victims)) {
        c.victims.pop_back();
        continue;
      }
      release(v, true);
      if (enough()) break;
    }
    if (!enough()) return std::nullopt;
    for (size_t i = c.victims.size(); i-- > 0;) {
      const size_t v = c.victims[i];
      release(v, false);
      if (enough()) {
        c.victims.erase(c.victims.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        release(v, true);
      }
    }
    return c;
  }

  std::optional<Choice> plan_gang(int k) {
    std::vector<uint32_t> base, touched;
    std::unordered_set<uint32_t> touched_set;
    for (uint32_t n : st_.keys[k].nodes) {
      const Node& node = st_.nodes[n];
      const NodeKey* nk = node.find_key(k);
      if (nk == nullptr || !eligible(node, job_) || !in_block(node))
        continue;  // Never stops jobs where it could not run.
      if (ClusterState::fit_class(node, node.usable(*nk) & ~node.held, job_.devices) != kNoFit && room(n, {})) {
        base.push_back(n);
        continue;
      }
      touched.push_back(n);
      touched_set.insert(n);
    }
    // A nodelist shorter than the gang: its nodes must be among those the job takes.
    std::vector<uint32_t> listed;
    if (lists_some(job_)) {
      for (const std::string& name : job_.constraints->nodelist) {
        auto n = st_.find_node(name);
        if (!n || (!touched_set.count(*n) && std::find(base.begin(), base.end(), *n) == base.end()))
          return std::nullopt;
        listed.push_back(*n);
      }
    }
    auto in_base = [&](uint32_t n) { return std::find(base.begin(), base.end(), n) != base.end(); };
    if (static_cast<int>(base.size()) >= job_.nodes && std::all_of(listed.begin(), listed.end(), in_base)) {
      fits_now_ = true;
      return std::nullopt;
    }
    // Candidates holding cards, CPUs or memory on a node that might then fit.
    std::vector<size_t> relevant;
    for (size_t i = 0; i < cands_.size(); ++i) {
      const std::vector<uint32_t> held = nodes_of(cands_[i]);
      if (std::any_of(held.begin(), held.end(), [&](uint32_t n) { return touched_set.count(n) != 0; }))
        relevant.push_back(i);
    }
    auto fitting = [&](const std::vector<size_t>& victims) {
      std::vector<std::pair<uint32_t, Mask>> out;
      for (uint32_t n : touched) {
        const Node& node = st_.nodes[n];
        const Mask usable = node.usable(*node.find_key(k));
        const Mask free = (usable & ~node.held) | (usable & victim_cards_on(victims, n));
        if (ClusterState::fit_class(node, free, job_.devices) != kNoFit && room(n, victims))
          out.emplace_back(n, ClusterState::pick_group(node, free, job_.devices));
      }
      return out;
    };
    auto feasible = [&](const std::vector<size_t>& victims) {
      const auto fit = fitting(victims);
      auto fits_listed = [&](uint32_t n) {
        return in_base(n) || std::any_of(fit.begin(), fit.end(), [&](const auto& g) { return g.first == n; });
      };
      return static_cast<int>(base.size() + fit.size()) >= job_.nodes &&
             std::all_of(listed.begin(), listed.end(), fits_listed);
    };
    std::optional<Choice> best;
    if (relevant.size() <= kExactCandidates) {
      const uint32_t sets = uint32_t{1} << relevant.size();
      for (int size = 1; size <= static_cast<int>(relevant.size()) && !best; ++size) {
        for (uint32_t bits = 1; bits < sets; ++bits) {
          if (masks::popcount(bits) != size) continue;
          Choice c;
          masks::for_each_slot(bits, [&](int i) { c.victims.push_back(relevant[static_cast<size_t>(i)]); });
          if (!feasible(c.victims) || !keeps_guarantees(c.victims)) continue;
          if (!best || better(c, *best)) best = std::move(c);
        }
      }
    } else {
      std::vector<uint32_t> listed_touched;
      for (uint32_t n : listed)
        if (!in_base(n)) listed_touched.push_back(n);
      best = greedy_gang(k, static_cast<int>(base.size()), touched_set, relevant, listed_touched);
    }
    if (!best) return std::nullopt;
    // The nodelist's nodes first, then the nodes the victims free, then nodes free already.
    best->groups = fitting(best->victims);
    for (uint32_t n : base) {
      const Node& node = st_.nodes[n];
      const Mask free = node.usable(*node.find_key(k)) & ~node.held;
      best->groups.emplace_back(n, ClusterState::pick_group(node, free, job_.devices));
    }
    std::stable_partition(best->groups.begin(), best->groups.end(), [&](const auto& g) {
      return std::find(listed.begin(), listed.end(), g.first) != listed.end();
    });
    best->groups.resize(static_cast<size_t>(job_.nodes));
    return best;
  }

  const ClusterState& st_;
  const PreemptionRequest& req_;
  const PendingJob& job_;
  std::vector<Candidate> cands_;               // Eligible victims, newest first.
  std::unordered_map<int32_t, size_t> index_;  // Allocator job handle -> candidate.
  bool fits_now_ = false;
  const std::string* block_ = nullptr;  // The block plan_gang() stays in (blocks()); null: any node.
};

}  // namespace

PreemptionOutcome plan_preemption(const ClusterState& state, const PreemptionRequest& req) {
  if (req.job == nullptr) return {};
  return Planner(state, req).run();
}

}  // namespace tessel::scheduler::detail
