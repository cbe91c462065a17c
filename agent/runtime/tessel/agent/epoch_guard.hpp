#pragma once
// EpochGuard: the agent's side of fencing (agent_protocol.hpp, "Fencing"). It keeps the
// highest leader epoch any scheduler answer carried, durably in the state dir (the file
// `epoch`, one decimal number), so an agent restarted while an old leader is paused
// still refuses it. An answer whose epoch is older than that is refused: its
// assignments are not started, its missing ones not killed, its acknowledgements not
// applied. Epoch 0 (a scheduler without replicas, or one that predates fencing) is
// always admitted and never recorded.
// Thread-safe: the agent's loops share one guard.

#include <cstdint>
#include <memory>
#include <string>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/base/result.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::agent {

class EpochGuard {
 public:
  // Reads `path` (missing: nothing seen yet). Errors: unreadable, or not a number.
  static Result<std::unique_ptr<EpochGuard>> open(const std::string& path);

  // Whether an answer from a scheduler at `epoch` may be acted on: true for 0 and for
  // any epoch at least the highest seen. A higher one is recorded first (fsynced);
  // when that write fails it is still admitted and kept in memory, with a warning.
  // A refusal is logged once per refused epoch; `what` names the answer ("assignments").
  bool admit(int64_t epoch, const char* what) EXCLUDES(mu_);
  int64_t highest() const EXCLUDES(mu_);
  uint64_t refused_total() const EXCLUDES(mu_);
  // What was refused since this guard opened: sent in every registration and
  // heartbeat, so the current leader learns an old one is still answering.
  api::EpochRefusals refusals() const EXCLUDES(mu_);

 private:
  EpochGuard(std::string path, int64_t highest) : path_(std::move(path)), highest_(highest) {}

  const std::string path_;
  mutable Mutex mu_;
  int64_t highest_ GUARDED_BY(mu_);
  int64_t last_warned_ GUARDED_BY(mu_) = -1;  // The refused epoch logged last.
  api::EpochRefusals refusals_ GUARDED_BY(mu_);
};

// Where a state dir keeps the guard's file.
inline std::string epoch_file_path(const std::string& state_dir) { return state_dir + "/epoch"; }

}  // namespace tessel::agent
