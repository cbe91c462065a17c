#pragma once
// When the scheduling pass runs. Every change that may matter marks the state dirty;
// the scheduler thread runs a pass when it is. A pass costs O(queue), so under a
// stream of submissions into a full cluster it is skipped: when nothing but
// submissions changed since a pass that left no card free, nothing new can fit, and
// only one full pass per `full_pass_every` gives the new jobs their reasons. Any
// change of capacity (cards freed, a node added, a quota raised) ends the skipping.
//
// Pure and not thread-safe: its owner (ClusterState) keeps it under its mutex and
// passes the time in (steady time: this paces CPU use, not what jobs see).

#include <chrono>

namespace tessel::scheduler {

class PassPacing {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit PassPacing(std::chrono::nanoseconds full_pass_every = std::chrono::seconds(1))
      : full_pass_every_(full_pass_every) {}

  // A change asks for a pass. `capacity`: it may let a pending job fit (false for a
  // new submission only).
  void mark_dirty(bool capacity) {
    dirty_ = true;
    capacity_changed_ = capacity_changed_ || capacity;
  }
  // Whether the scheduler thread should start a pass now; after a skipped pass only
  // a change of capacity (or full_pass_every() of waiting) is worth one.
  bool due() const { return skipped_ ? dirty_ && capacity_changed_ : dirty_; }
  // The scheduler thread takes the dirty mark as it starts a pass.
  void take_dirty() { dirty_ = false; }

  // At the start of a pass at `now`: false when it is to be skipped. Otherwise the
  // pass is a full one and capacity counts as unchanged from here on.
  bool begin_pass(TimePoint now) {
    skipped_ = !capacity_changed_ && full_after_pass_ && now - last_full_pass_ < full_pass_every_;
    if (skipped_) return false;
    capacity_changed_ = false;
    last_full_pass_ = now;
    return true;
  }
  // At the end of a full pass: whether it left any card free.
  void end_pass(bool any_free_card) { full_after_pass_ = !any_free_card; }

  // Whether the last pass was skipped: new jobs still lack their reasons, and a full
  // pass is due within full_pass_every().
  bool skipped() const { return skipped_; }
  std::chrono::nanoseconds full_pass_every() const { return full_pass_every_; }

 private:
  const std::chrono::nanoseconds full_pass_every_;
  bool dirty_ = false;
  bool capacity_changed_ = true;
  bool full_after_pass_ = false;
  bool skipped_ = false;
  TimePoint last_full_pass_{};
};

}  // namespace tessel::scheduler
