#pragma once
// A small tmpfs of a test's own (root only: mount(2)), to fill a disk up to ENOSPC
// under a running program and free it again.

#include <string>

namespace tessel::testkit {

// Mounts a tmpfs of `size` (mount's size= option, e.g. "1m") at `path` (created);
// unmounts it (lazily) when destroyed. ok() is false, and error() says why, when the
// mount failed (not root, no CAP_SYS_ADMIN): skip the test then.
class TmpfsMount {
 public:
  explicit TmpfsMount(std::string path, const std::string& size = "1m");
  ~TmpfsMount();
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
  bool ok_ = false;
};

// Writes zeros to `path` until its file system is full.
void fill_until_full(const std::string& path);

}  // namespace tessel::testkit
