#pragma once
// A stand-in for systemd's notification socket: a datagram socket bound at a path
// (hand it to a child as NOTIFY_SOCKET) that collects what sd_notify() sends, so a
// test can wait for "READY=1", "WATCHDOG=1" or a STATUS line.

#include <chrono>
#include <string>
#include <vector>

namespace tessel::testkit {

class NotifySocket {
 public:
  // Binds at `path`; throws std::runtime_error when it cannot.
  explicit NotifySocket(std::string path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }
  // Receives until every one of `wanted` occurs in what came so far, or `timeout`
  // passes; true when all did.
  bool wait_for_all(const std::vector<std::string>& wanted, std::chrono::milliseconds timeout);
  // Every message received so far, one per line.
  const std::string& received() const { return received_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string received_;
};

}  // namespace tessel::testkit
