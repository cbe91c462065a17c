#include "tessel/agent/epoch_guard.hpp"

#include <cerrno>
#include <charconv>
#include <string_view>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "tessel/agent/durable_file.hpp"

namespace tessel::agent {

Result<std::unique_ptr<EpochGuard>> EpochGuard::open(const std::string& path) {
  int64_t highest = 0;
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return std::unique_ptr<EpochGuard>(new EpochGuard(path, highest));  // No answer with an epoch yet.
  auto text = read_small_file(path, 64);
  if (!text) return text.error().wrap("reading leader epoch");
  std::string_view s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), highest);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || highest < 0)
    return Error{"reading " + path + ": not an epoch: '" + std::string(s.substr(0, 40)) + "'"};
  return std::unique_ptr<EpochGuard>(new EpochGuard(path, highest));
}

bool EpochGuard::admit(int64_t epoch, const char* what) {
  if (epoch == 0) return true;
  MutexLock lk(mu_);
  if (epoch < highest_) {
    ++refusals_.total;
    refusals_.last_epoch = epoch;
    refusals_.highest = highest_;
    if (last_warned_ != epoch) {
      last_warned_ = epoch;
      spdlog::warn(
          "refusing {} from a scheduler at epoch {}: a newer leader (epoch {}) has answered; "
          "nothing is started or killed on its word",
          what, epoch, highest_);
    }
    return false;
  }
  if (epoch == highest_) return true;
  if (auto s = write_file_durable(path_, std::to_string(epoch) + "\n"); !s)
    spdlog::warn("recording leader epoch {} in {}: {} (kept in memory only)", epoch, path_, s.error().message);
  else
    spdlog::info("scheduler leader epoch {} (was {})", epoch, highest_);
  highest_ = epoch;
  return true;
}

int64_t EpochGuard::highest() const {
  MutexLock lk(mu_);
  return highest_;
}

uint64_t EpochGuard::refused_total() const {
  MutexLock lk(mu_);
  return refusals_.total;
}

api::EpochRefusals EpochGuard::refusals() const {
  MutexLock lk(mu_);
  return refusals_;
}

}  // namespace tessel::agent
