#include "tessel/agent/log_cap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessel::agent {

std::string log_cap_marker(int64_t cap_bytes) {
  std::string size = std::to_string(cap_bytes) + " bytes";
  if (cap_bytes % (int64_t{1} << 20) == 0)
    size = std::to_string(cap_bytes >> 20) + " MiB";
  else if (cap_bytes % 1024 == 0)
    size = std::to_string(cap_bytes >> 10) + " KiB";
  return "\n[tessel: this rank's output passed the node's log cap of " + size + "; the rest was dropped]\n";
}

bool enforce_log_cap(const std::string& path, int64_t cap_bytes) {
  if (cap_bytes <= 0) return false;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_size <= cap_bytes) return false;
  const std::string marker = log_cap_marker(cap_bytes);
  const auto kept = static_cast<off_t>(cap_bytes + static_cast<int64_t>(marker.size()));
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return true;
  // Already cut: keep the cap and the marker, drop what came since.
  char tail[64] = {};
  const bool cut = st.st_size >= kept &&
                   ::pread(fd, tail, sizeof tail, kept - static_cast<off_t>(sizeof tail)) == sizeof tail &&
                   std::string(tail, sizeof tail) == marker.substr(marker.size() - sizeof tail);
  if (cut) {
    if (st.st_size > kept) (void)::ftruncate(fd, kept);
  } else if (::ftruncate(fd, cap_bytes) == 0) {
    // The ranks append (O_APPEND): this lands right at the cut.
    (void)::pwrite(fd, marker.data(), marker.size(), cap_bytes);
  }
  ::close(fd);
  return true;
}

}  // namespace tessel::agent
