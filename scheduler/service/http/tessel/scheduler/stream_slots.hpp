#pragma once
// StreamSlots: long-lived streams (followed logs, console event streams) per user,
// capped so one user cannot hold every stream the server allows and deny the rest.
// A slot is a handle: the stream keeps it, and the slot is free again the moment the
// last copy goes (the stream ended, or its client left).
// Thread-safe: one mutex; handles may be dropped on any thread.

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "tessel/base/result.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

class StreamSlots : public std::enable_shared_from_this<StreamSlots> {
 public:
  // `kind` names the streams in messages ("followed log streams"); per_user 0: no cap.
  static std::shared_ptr<StreamSlots> make(std::string kind, size_t per_user);

  // A slot for `user`, or resource_exhausted (429) naming the cap when `user` holds
  // per_user of them already.
  Result<std::shared_ptr<void>> take(const std::string& user) EXCLUDES(mu_);
  size_t held_by(const std::string& user) const EXCLUDES(mu_);
  size_t per_user() const { return per_user_; }

 private:
  StreamSlots(std::string kind, size_t per_user) : kind_(std::move(kind)), per_user_(per_user) {}
  void release(const std::string& user) EXCLUDES(mu_);

  const std::string kind_;
  const size_t per_user_;
  mutable Mutex mu_;
  std::map<std::string, size_t> held_ GUARDED_BY(mu_);
};

}  // namespace tessel::scheduler
