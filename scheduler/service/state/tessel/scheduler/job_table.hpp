#pragma once
// The scheduler's table of jobs, by key (job_key(): a job's sequence number, an
// array element's right after its parent's), with the three queues of pending jobs
// that index it: `pending` (offered to the scheduling pass), `waiting` (their
// dependencies not all met yet; never offered) and `held` (held by a user,
// api::Job::held_by; never offered, dependencies not looked at until released). A
// pending job is in exactly one of them. It is the only owner of the
// entries: the queues point into the table (std::map entries do not move), and
// erase() drops a job from all three, so none can hold a job the table lost. It also
// hands out sequence numbers (persisted with each job; past the highest restored),
// and keeps each array parent's counts of its elements by state (ArrayCounts; the
// arrays module, state_arrays.cpp, updates them as elements change).
//
// Not thread-safe: its owner (ClusterState) keeps it under its mutex. at() on a key
// that is not there is a bug of the caller (std::out_of_range).

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/job.hpp"

namespace tessel::scheduler {

struct JobEntry {
  api::Job job;
  int64_t queued_at_ms = 0;                        // Submission or requeue time.
  std::map<std::string, api::TaskReport> reports;  // Current attempt, by assignment id.
  // Pending jobs, from the last scheduling pass (shown, never stored).
  int queue_position = 0;
  std::optional<int64_t> estimated_start_ms;
};

// An array parent's size, its parallel limit, and its elements by api::JobState
// (indexed by the state's value).
struct ArrayCounts {
  int count = 0;
  int parallel = 0;
  std::array<int, 6> states{};
};

class JobTable {
 public:
  using Map = std::map<int64_t, JobEntry>;
  using Queue = std::map<int64_t, JobEntry*>;

  // --- The table, in key order ---
  // Adds the job at `key`, or replaces it (keeping its place in the queues).
  JobEntry& put(int64_t key, JobEntry entry) {
    auto [it, added] = jobs_.try_emplace(key);
    it->second = std::move(entry);
    return it->second;
  }
  JobEntry& at(int64_t key) { return jobs_.at(key); }
  const JobEntry& at(int64_t key) const { return jobs_.at(key); }
  Map::iterator find(int64_t key) { return jobs_.find(key); }
  Map::const_iterator find(int64_t key) const { return jobs_.find(key); }
  Map::iterator lower_bound(int64_t key) { return jobs_.lower_bound(key); }
  Map::const_iterator lower_bound(int64_t key) const { return jobs_.lower_bound(key); }
  Map::iterator upper_bound(int64_t key) { return jobs_.upper_bound(key); }
  Map::const_iterator upper_bound(int64_t key) const { return jobs_.upper_bound(key); }
  Map::iterator begin() { return jobs_.begin(); }
  Map::iterator end() { return jobs_.end(); }
  Map::const_iterator begin() const { return jobs_.begin(); }
  Map::const_iterator end() const { return jobs_.end(); }
  size_t size() const { return jobs_.size(); }
  // Removes the job, from the queues too (and an array parent's counts).
  void erase(int64_t key) {
    dequeue(key);
    arrays_.erase(key);
    jobs_.erase(key);
  }

  // --- The queues ---
  // Offers the (pending) job at `key` to the scheduling pass; takes it out of the others.
  void queue(int64_t key) {
    waiting_.erase(key);
    held_.erase(key);
    pending_[key] = &jobs_.at(key);
  }
  // Keeps the (pending) job at `key` from the pass until its dependencies are met.
  void hold_back(int64_t key) {
    pending_.erase(key);
    held_.erase(key);
    waiting_[key] = &jobs_.at(key);
  }
  // Keeps the (pending) job at `key` from the pass until a user releases it.
  void hold(int64_t key) {
    pending_.erase(key);
    waiting_.erase(key);
    held_[key] = &jobs_.at(key);
  }
  // Takes the job off every queue (placed, cancelled, ended, or released to be queued again).
  void dequeue(int64_t key) {
    pending_.erase(key);
    waiting_.erase(key);
    held_.erase(key);
  }
  const Queue& pending() const { return pending_; }
  const Queue& waiting() const { return waiting_; }
  const Queue& held() const { return held_; }

  // --- Array parents' counts, by the parent's key ---
  ArrayCounts& add_array(int64_t key, int count, int parallel) {
    return arrays_[key] = ArrayCounts{count, parallel, {}};
  }
  bool is_array(int64_t key) const { return arrays_.count(key) != 0; }
  bool has_arrays() const { return !arrays_.empty(); }
  // nullptr when `key` is not an array's parent.
  ArrayCounts* array(int64_t key) {
    auto it = arrays_.find(key);
    return it == arrays_.end() ? nullptr : &it->second;
  }
  const ArrayCounts* array(int64_t key) const {
    auto it = arrays_.find(key);
    return it == arrays_.end() ? nullptr : &it->second;
  }

  // --- Sequence numbers ---
  // Reserves `n` sequence numbers; returns the first.
  int64_t reserve_seq(int64_t n = 1) {
    const int64_t first = next_seq_;
    next_seq_ += n;
    return first;
  }
  int64_t next_seq() const { return next_seq_; }
  // At restore: a stored job's sequence number; the next ones come after it.
  void restored_seq(int64_t seq) {
    if (seq >= next_seq_) next_seq_ = seq + 1;
  }

 private:
  Map jobs_;
  Queue pending_;
  Queue waiting_;
  Queue held_;
  std::map<int64_t, ArrayCounts> arrays_;
  int64_t next_seq_ = 1;
};

}  // namespace tessel::scheduler
