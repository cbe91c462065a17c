#include "tessel/scheduler/group_commit.hpp"

#include <spdlog/spdlog.h>

namespace tessel::scheduler {

GroupCommitter::GroupCommitter(Commit commit) : commit_(std::move(commit)) {
  writer_ = std::thread([this] { writer_loop(); });
}

GroupCommitter::~GroupCommitter() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

Status GroupCommitter::write(const WriteBatch& batch) {
  if (batch.empty()) return ok_status();
  auto p = std::make_shared<Pending>(Pending{&batch, {}, nullptr});
  auto fut = p->done.get_future();
  {
    MutexLock lk(mu_);
    if (stop_) return Error::unavailable("store is closed");
    queue_.push_back(p);
  }
  cv_.notify_one();
  return fut.get();
}

std::future<Status> GroupCommitter::queue(std::shared_ptr<const WriteBatch> batch) {
  const bool empty = batch->empty();
  auto p = std::make_shared<Pending>(Pending{batch.get(), {}, std::move(batch)});
  auto fut = p->done.get_future();
  if (empty) {
    p->done.set_value(ok_status());
    return fut;
  }
  {
    MutexLock lk(mu_);
    if (stop_) {
      p->done.set_value(Error::unavailable("store is closed"));
      return fut;
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
  return fut;
}

void GroupCommitter::writer_loop() {
  for (;;) {
    std::vector<std::shared_ptr<Pending>> group;
    {
      MutexLock lk(mu_);
      cv_.wait(mu_, [&]() REQUIRES(mu_) { return stop_ || !queue_.empty(); });
      if (queue_.empty() && stop_) return;
      while (!queue_.empty() && group.size() < kMaxGroup) {
        group.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    std::vector<const WriteBatch*> batches;
    batches.reserve(group.size());
    for (const auto& p : group) batches.push_back(p->batch);
    Status s = commit_(batches);
    if (!s) spdlog::error("store: commit of {} batches failed: {}", group.size(), s.error().message);
    for (const auto& p : group) p->done.set_value(s);
  }
}

}  // namespace tessel::scheduler
