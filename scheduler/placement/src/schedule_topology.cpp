#include "schedule_pass.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "pending_reasons.hpp"
#include "schedule_pass_util.hpp"
#include "tessel/api/topology.hpp"

namespace tessel::scheduler::detail {

using pass::node_of;

std::optional<SchedulePass::Plan> SchedulePass::plan_gang(const PendingJob& job, const std::vector<int>& keys,
                                                          bool use_reserved) const {
  if (job.constraints == nullptr && state_.topology_levels.empty()) return plan_gang_anywhere(job, keys, use_reserved);
  const TopologyPlan topology = topology_plan(job, state_.topology_levels);
  for (std::string_view level : topology.keys)
    if (auto plan = plan_in_block(job, keys, use_reserved, level)) return plan;
  if (topology.required) return std::nullopt;
  return plan_gang_anywhere(job, keys, use_reserved);
}

std::optional<SchedulePass::Plan> SchedulePass::plan_in_block(const PendingJob& job, const std::vector<int>& keys,
                                                              bool use_reserved, std::string_view level) const {
  const auto blocks = state_.nodes_by_label.find(level);
  if (blocks == state_.nodes_by_label.end()) return std::nullopt;
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
    if (job.devices == 0) {  // CPU-only ranks: any node of the key with their CPUs and memory.
      for (uint32_t n : state_.keys[k].nodes) {
        const Node& node = state_.nodes[n];
        if (eligible(node, job) && fits(node, need_on(node, job), !use_reserved)) add(Choice{n, 0, need_on(node, job)});
      }
    } else {
      for (uint64_t entry : state_.keys[k].fit[masks::size_index(job.devices)]) {
        const Node& node = state_.nodes[node_of(entry)];
        if (!eligible(node, job) || !fits(node, need_on(node, job), !use_reserved)) continue;
        add(Choice{node_of(entry),
                   ClusterState::pick_group(node, node.free_cards(*node.find_key(k), true), job.devices),
                   need_on(node, job)});
      }
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

std::string SchedulePass::topology_reason(const PendingJob& job, const std::vector<int>& keys, bool* waiting) const {
  const std::string& level = job.constraints->topology.required;
  // Per block (a value of the label, from the label index in the values' order): nodes
  // able to hold the job at all, and with the cards free now; the first largest of each.
  // eligible() admits only the job's admitted nodes, which all have the label.
  std::pair<std::string_view, int> most_capable{"", 0}, most_free{"", 0};
  const auto index = state_.nodes_by_label.find(level);
  if (index != state_.nodes_by_label.end()) {
    for (const auto& [value, nodes] : index->second) {
      int capable = 0, free = 0;
      for (int k : keys) {
        for (uint32_t n : nodes) {
          const Node& node = state_.nodes[n];
          const NodeKey* nk = node.find_key(k);
          if (!node.in_key_nodes || nk == nullptr || !eligible(node, job)) continue;
          const bool cardless = job.devices == 0;  // Its CPUs and memory alone decide.
          if (!cardless && ClusterState::fit_class(node, node.usable(*nk), job.devices) == kNoFit) continue;
          ++capable;
          if ((cardless || ClusterState::fit_class(node, node.free_cards(*nk, true), job.devices) != kNoFit) &&
              fits(node, need_on(node, job), true))
            ++free;
        }
      }
      if (capable > most_capable.second) most_capable = {value, capable};
      if (free > most_free.second) most_free = {value, free};
    }
  }
  if (most_capable.second < job.nodes)
    return reasons::topology_too_small(job.nodes, level, std::string(most_capable.first), most_capable.second);
  *waiting = true;
  return reasons::topology_waiting(job.nodes, level, std::string(most_free.first), most_free.second);
}

}  // namespace tessel::scheduler::detail
