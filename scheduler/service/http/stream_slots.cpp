#include "tessel/scheduler/stream_slots.hpp"

namespace tessel::scheduler {

std::shared_ptr<StreamSlots> StreamSlots::make(std::string kind, size_t per_user) {
  return std::shared_ptr<StreamSlots>(new StreamSlots(std::move(kind), per_user));
}

Result<std::shared_ptr<void>> StreamSlots::take(const std::string& user) {
  {
    MutexLock lk(mu_);
    size_t& n = held_[user];
    if (per_user_ > 0 && n >= per_user_)
      return Error{user + " holds " + std::to_string(n) + " " + kind_ + ", the most one user may hold at once; " +
                       "close one first",
                   ErrorCode::resource_exhausted};
    ++n;
  }
  // The handle keeps the slots alive (they may outlive the service that made them).
  std::weak_ptr<StreamSlots> weak = weak_from_this();
  return std::shared_ptr<void>(static_cast<void*>(nullptr), [weak, user](void*) {
    if (auto slots = weak.lock()) slots->release(user);
  });
}

size_t StreamSlots::held_by(const std::string& user) const {
  MutexLock lk(mu_);
  auto it = held_.find(user);
  return it == held_.end() ? 0 : it->second;
}

void StreamSlots::release(const std::string& user) {
  MutexLock lk(mu_);
  auto it = held_.find(user);
  if (it == held_.end()) return;
  if (--it->second == 0) held_.erase(it);
}

}  // namespace tessel::scheduler
