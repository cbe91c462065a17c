#include "tessel/http/fd_limit.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>

namespace tessel::http {

uint64_t raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  const rlim_t want = std::min<rlim_t>(lim.rlim_max, rlim_t{1} << 20);  // RLIM_INFINITY is not settable.
  if (lim.rlim_cur < want) {
    rlimit raised{want, lim.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = want;
  }
  spdlog::debug("open file limit {}", lim.rlim_cur);
  return lim.rlim_cur;
}

size_t connection_cap(uint64_t fd_limit, size_t configured, size_t fds_per_connection, bool explicit_flag,
                      std::string_view flag) {
  constexpr uint64_t kReserve = 256;
  const uint64_t per = std::max<size_t>(fds_per_connection, 1);
  const uint64_t spare = fd_limit > 2 * kReserve ? fd_limit - kReserve : fd_limit / 2;
  const size_t fits = std::max<size_t>(static_cast<size_t>(spare / per), 1);
  if (configured <= fits) return configured;
  if (explicit_flag) {
    spdlog::warn("{} {} is above what the open file limit {} allows ({}): raise LimitNOFILE", flag, configured,
                 fd_limit, fits);
    return configured;
  }
  spdlog::info("at most {} connections for {} (open file limit {})", fits, flag, fd_limit);
  return fits;
}

}  // namespace tessel::http
