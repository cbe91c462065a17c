#pragma once
// Fair share: decayed card usage per project and per user, and the factor that
// orders jobs of equal priority. Pure: times are passed in (no clock), no I/O,
// not thread-safe (the scheduler service owns one ledger behind its mutex).
//
// Usage of a project at time t, in card-seconds, with half-life H:
//   U(t) = sum over the intervals [s, e] its jobs held c cards of
//          integral from s to min(e, t) of c * 2^(-(t - x) / H) dx
// so a card-second used H ago counts half. Its fair-share factor is
//   F = 2^(-(U / U_total) / (shares / shares_total))
// (Slurm's classic formula): 1 for a project that used nothing, 0.5 for one that
// used exactly its share of the recent total, towards 0 the more it used.

#include <cstdint>
#include <map>
#include <string>

namespace tessel::scheduler {

class UsageLedger {
 public:
  explicit UsageLedger(int64_t half_life_ms);

  // Records `cards` held from start_ms to end_ms (ignored when end_ms <= start_ms
  // or cards <= 0). Intervals may be added in any order.
  void add(const std::string& project, const std::string& user, int64_t cards, int64_t start_ms, int64_t end_ms);

  // Decayed usage at now_ms in card-seconds, by project and by user.
  std::map<std::string, double> by_project(int64_t now_ms) const;
  std::map<std::string, double> by_user(int64_t now_ms) const;

  int64_t half_life_ms() const { return half_life_ms_; }

 private:
  // Values are kept as of epoch_ms_ (the integral's weight at the epoch; may exceed
  // the usage then, for intervals after it): U(t) = value * 2^(-(t - epoch) / H).
  // The epoch moves forward when a new interval ends far past it, so exponents stay small.
  double weight(int64_t t_ms) const;  // 2^((t - epoch) / H).
  void rebase(int64_t t_ms);
  std::map<std::string, double> scaled(const std::map<std::string, double>& values, int64_t now_ms) const;

  int64_t half_life_ms_;
  int64_t epoch_ms_ = 0;
  bool has_epoch_ = false;
  std::map<std::string, double> project_;
  std::map<std::string, double> user_;
};

// F for each project in `shares` (projects with usage but no entry are ignored).
// Every project's factor is 1 while nobody used anything.
std::map<std::string, double> fair_share_factors(const std::map<std::string, int64_t>& shares,
                                                 const std::map<std::string, double>& usage);

}  // namespace tessel::scheduler
