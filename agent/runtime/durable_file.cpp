#include "tessel/agent/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessel::agent {

Error errno_error(const std::string& what) {
  const int err = errno;
  ErrorCode code = ErrorCode::unavailable;  // EIO, ENOSPC, EROFS, ...: the disk may come back.
  if (err == ENOENT) code = ErrorCode::not_found;
  if (err == EACCES || err == EPERM) code = ErrorCode::permission_denied;
  if (err == EEXIST) code = ErrorCode::conflict;
  return Error{what + ": " + std::strerror(err), code};
}

static Status fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_error("open dir " + dir);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return errno_error("fsync dir " + dir);
  return ok_status();
}

static Status write_file(const std::string& path, const std::string& data, bool sync, unsigned mode = 0600);

Status write_file_durable(const std::string& path, const std::string& data) { return write_file(path, data, true); }
Status write_file_atomic(const std::string& path, const std::string& data, unsigned mode) {
  return write_file(path, data, false, mode);
}

Status append_line_durable(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("open " + path);
  const std::string data = line + "\n";
  ssize_t n = ::write(fd, data.data(), data.size());
  if (n != static_cast<ssize_t>(data.size())) {
    Error e = n < 0 ? errno_error("write " + path) : Error::unavailable("write " + path + ": short write");
    ::close(fd);
    return e;
  }
  int rc = ::fdatasync(fd);
  Error e = errno_error("fdatasync " + path);
  ::close(fd);
  if (rc != 0) return e;
  return ok_status();
}

static Status write_file(const std::string& path, const std::string& data, bool sync, unsigned mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error("open " + tmp);
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0) {  // Exact, whatever the umask.
    Error e = errno_error("chmod " + tmp);
    ::close(fd);
    return e;
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = errno_error("write " + tmp);
      ::close(fd);
      return e;
    }
    off += static_cast<size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) {
    Error e = errno_error("fsync " + tmp);
    ::close(fd);
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errno_error("rename " + tmp);
  if (!sync) return ok_status();
  return fsync_dir(std::filesystem::path(path).parent_path().string());
}

Status write_probe(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::unavailable(std::strerror(errno));
  static constexpr char kData[] = "probe\n";
  constexpr auto kLen = static_cast<ssize_t>(sizeof kData - 1);
  const ssize_t n = ::write(fd, kData, kLen);
  std::string why;
  if (n != kLen)
    why = n < 0 ? std::strerror(errno) : "short write";
  else if (::fdatasync(fd) != 0)
    why = std::strerror(errno);
  ::close(fd);
  ::unlink(path.c_str());
  if (!why.empty()) return Error::unavailable(why);
  return ok_status();
}

Status make_dir_durable(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Error::unavailable("mkdir " + path + ": " + ec.message());
  return fsync_dir(std::filesystem::path(path).parent_path().string());
}

Result<std::string> read_small_file(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("open " + path);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = errno_error("read " + path);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return Error::too_large("read " + path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace tessel::agent
