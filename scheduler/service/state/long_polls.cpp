#include "tessel/scheduler/long_polls.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace tessel::scheduler {

namespace {
constexpr int64_t kWarnEveryNs = int64_t{60} * 1'000'000'000;
}  // namespace

bool LongPolls::admit() {
  if (max_waiting_ <= 0 || waiting_ < max_waiting_) return true;
  ++shed_total_;
  const int64_t now = clock_.steady_ns();
  if (!warned_at_ns_ || now - *warned_at_ns_ >= kWarnEveryNs) {
    warned_at_ns_ = now;
    spdlog::warn(
        "{} agents hold long polls, the most allowed; the others are told to poll every {} ms "
        "(slower job starts there): raise --max-long-polls",
        waiting_, poll_after_ms_);
  }
  return false;
}

uint64_t LongPolls::park(const std::string& node, Done done) {
  const uint64_t id = next_id_++;
  by_node_[node].push_back(Parked{id, std::move(done)});
  ++waiting_;
  return id;
}

std::optional<LongPolls::Done> LongPolls::take(const std::string& node, uint64_t id) {
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return std::nullopt;
  auto& list = it->second;
  auto p = std::find_if(list.begin(), list.end(), [id](const Parked& x) { return x.id == id; });
  if (p == list.end()) return std::nullopt;  // Already answered.
  Done done = std::move(p->done);
  list.erase(p);
  if (list.empty()) by_node_.erase(it);
  --waiting_;
  return done;
}

std::vector<LongPolls::Done> LongPolls::take_all(const std::string& node) {
  std::vector<Done> out;
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return out;
  out.reserve(it->second.size());
  for (auto& p : it->second) out.push_back(std::move(p.done));
  by_node_.erase(it);
  waiting_ -= static_cast<int64_t>(out.size());
  return out;
}

std::vector<std::string> LongPolls::nodes() const {
  std::vector<std::string> out;
  out.reserve(by_node_.size());
  for (const auto& [node, _] : by_node_) out.push_back(node);
  return out;
}

}  // namespace tessel::scheduler
