#pragma once
// Group commit, shared by the stores: write() queues a batch and blocks; one writer
// thread takes everything queued (up to kMaxGroup batches), hands it to `commit` in
// one call (one transaction), and answers every batch with that call's outcome.
// Concurrent writers thus share one commit: durability without a per-request cost.

#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

class GroupCommitter {
 public:
  static constexpr size_t kMaxGroup = 512;  // Batches per transaction.
  using Commit = std::function<Status(const std::vector<const WriteBatch*>& group)>;

  // Starts the writer thread; `commit` runs on it only.
  explicit GroupCommitter(Commit commit);
  // Commits what is queued, then stops the writer; later writes fail as unavailable.
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Returns once `batch` is committed (or its group failed); an empty batch at once.
  Status write(const WriteBatch& batch) EXCLUDES(mu_);
  // Queues `batch` and returns at once; the future answers as write() would. Batches
  // commit in the order they were queued (by either call), so a caller that queues
  // under its own lock keeps that lock's order without waiting under it.
  std::future<Status> queue(std::shared_ptr<const WriteBatch> batch) EXCLUDES(mu_);

 private:
  struct Pending {
    const WriteBatch* batch;
    std::promise<Status> done;
    std::shared_ptr<const WriteBatch> owned;  // queue()'s batch, kept until committed.
  };
  void writer_loop() EXCLUDES(mu_);

  const Commit commit_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::shared_ptr<Pending>> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread writer_;  // Last: started once the rest exists.
};

}  // namespace tessel::scheduler
