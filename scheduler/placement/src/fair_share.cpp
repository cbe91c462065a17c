#include "tessel/scheduler/fair_share.hpp"

#include <algorithm>
#include <cmath>

namespace tessel::scheduler {

namespace {
// Half-lives an interval may end past the epoch before the epoch moves (2^64 stays
// far inside a double's range).
constexpr double kRebaseHalfLives = 64;
}  // namespace

UsageLedger::UsageLedger(int64_t half_life_ms) : half_life_ms_(std::max<int64_t>(half_life_ms, 1)) {}

double UsageLedger::weight(int64_t t_ms) const {
  return std::exp2(static_cast<double>(t_ms - epoch_ms_) / static_cast<double>(half_life_ms_));
}

void UsageLedger::rebase(int64_t t_ms) {
  const double f = 1.0 / weight(t_ms);
  for (auto* m : {&project_, &user_})
    for (auto& [_, v] : *m) v *= f;
  epoch_ms_ = t_ms;
}

void UsageLedger::add(const std::string& project, const std::string& user, int64_t cards, int64_t start_ms,
                      int64_t end_ms) {
  if (end_ms <= start_ms || cards <= 0) return;
  if (!has_epoch_) {
    epoch_ms_ = end_ms;
    has_epoch_ = true;
  } else if (static_cast<double>(end_ms - epoch_ms_) > kRebaseHalfLives * static_cast<double>(half_life_ms_)) {
    rebase(end_ms);
  }
  // Integral of c * 2^((x - epoch) / H) dx over [s, e], in card-seconds.
  const double h_s = static_cast<double>(half_life_ms_) / 1000.0 / std::log(2.0);
  const double v = static_cast<double>(cards) * h_s * (weight(end_ms) - weight(start_ms));
  project_[project] += v;
  user_[user] += v;
}

std::map<std::string, double> UsageLedger::scaled(const std::map<std::string, double>& values, int64_t now_ms) const {
  std::map<std::string, double> out;
  const double f = has_epoch_ ? 1.0 / weight(now_ms) : 0.0;
  for (const auto& [k, v] : values) out[k] = v * f;
  return out;
}

std::map<std::string, double> UsageLedger::by_project(int64_t now_ms) const { return scaled(project_, now_ms); }
std::map<std::string, double> UsageLedger::by_user(int64_t now_ms) const { return scaled(user_, now_ms); }

std::map<std::string, double> fair_share_factors(const std::map<std::string, int64_t>& shares,
                                                 const std::map<std::string, double>& usage) {
  double total_usage = 0, total_shares = 0;
  for (const auto& [name, s] : shares) {
    total_shares += static_cast<double>(s);
    if (auto it = usage.find(name); it != usage.end()) total_usage += it->second;
  }
  std::map<std::string, double> out;
  for (const auto& [name, s] : shares) {
    double u = 0;
    if (auto it = usage.find(name); it != usage.end() && total_usage > 0) u = it->second / total_usage;
    const double share = total_shares > 0 ? static_cast<double>(s) / total_shares : 1.0;
    out[name] = std::exp2(-u / share);
  }
  return out;
}

}  // namespace tessel::scheduler
