#include "tessel/scheduler/card_history.hpp"

#include <algorithm>

namespace tessel::scheduler {

namespace {

std::optional<float> reading(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<float>(*v);
}

CardHistory::Sample sample_of(const api::Device& d, int64_t now_ms) {
  CardHistory::Sample s;
  s.at_ms = now_ms;
  s.utilization_pct = reading(d.utilization_pct);
  if (d.memory_used_mib && d.memory_total_mib && *d.memory_total_mib > 0)
    s.memory_used_pct =
        static_cast<float>(100.0 * static_cast<double>(*d.memory_used_mib) / static_cast<double>(*d.memory_total_mib));
  s.temperature_c = reading(d.temperature_c);
  s.power_w = reading(d.power_w);
  return s;
}

}  // namespace

CardHistory::CardHistory(int64_t window_ms, int64_t resolution_ms)
    : window_ms_(std::max<int64_t>(window_ms, 1)), resolution_ms_(std::max<int64_t>(resolution_ms, 0)) {}

void CardHistory::record(const std::string& node, const std::vector<api::Device>& devices, int64_t now_ms) {
  MutexLock lk(mu_);
  NodeHistory& h = nodes_[node];
  if (!h.cards.empty() && now_ms - h.last_ms < resolution_ms_) return;
  h.last_ms = now_ms;
  // The samples a card can hold: one per resolution over the window, and the newest.
  const size_t cap = static_cast<size_t>(window_ms_ / std::max<int64_t>(resolution_ms_, 1)) + 1;
  std::map<int, std::deque<Sample>> kept;
  for (const api::Device& d : devices) {
    std::deque<Sample>& list = kept[d.module_id];
    if (auto old = h.cards.find(d.module_id); old != h.cards.end()) list = std::move(old->second);
    list.push_back(sample_of(d, now_ms));
    while (!list.empty() && (list.front().at_ms <= now_ms - window_ms_ || list.size() > cap)) list.pop_front();
  }
  h.cards = std::move(kept);  // Cards the node no longer reports are dropped.
}

std::vector<CardHistory::Card> CardHistory::of(const std::string& node, int64_t now_ms) const {
  MutexLock lk(mu_);
  std::vector<Card> out;
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return out;
  for (const auto& [module_id, list] : it->second.cards) {
    Card c{module_id, {}};
    for (const Sample& s : list)
      if (s.at_ms > now_ms - window_ms_) c.samples.push_back(s);
    out.push_back(std::move(c));
  }
  return out;
}

void CardHistory::forget(const std::string& node) {
  MutexLock lk(mu_);
  nodes_.erase(node);
}

}  // namespace tessel::scheduler
