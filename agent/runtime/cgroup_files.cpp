#include "tessel/agent/cgroup_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace tessel::agent {

static Error errno_error(const std::string& what, const std::string& path) {
  return Error{what + " " + path + ": " + std::strerror(errno)};
}

Result<std::string> read_cgroup_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_error("open", path);
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = errno_error("read", path);
      ::close(fd);
      return e;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1 << 20)) break;  // cgroup.procs of a huge task: enough to act on.
  }
  ::close(fd);
  return out;
}

Status write_cgroup_file(const std::string& path, const std::string& text, bool append) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) return errno_error("open", path);
  ssize_t n;
  do n = ::write(fd, text.data(), text.size());
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(text.size())) {
    Error e = n < 0 ? Error{"writing \"" + text + "\" to " + path + ": " + std::strerror(errno)}
                    : Error{"writing \"" + text + "\" to " + path + ": short write"};
    ::close(fd);
    return e;
  }
  if (::close(fd) != 0) return Error{"writing \"" + text + "\" to " + path + ": " + std::strerror(errno)};
  return ok_status();
}

bool path_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return ok_status();
  return errno_error("mkdir", path);
}

// A directory standing in for a cgroup (tests) keeps the files written to it, which
// cgroupfs would drop with the directory: they go first. Never on cgroupfs itself.
static void remove_stand_in_files(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0 || fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC) return;
  DIR* d = ::opendir(path.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d))
    if (e->d_type == DT_REG) ::unlink((path + "/" + e->d_name).c_str());
  ::closedir(d);
}

Status remove_dir(const std::string& path) {
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return ok_status();
  if (errno == ENOTEMPTY) {
    remove_stand_in_files(path);
    if (::rmdir(path.c_str()) == 0) return ok_status();
  }
  return errno_error("rmdir", path);
}

static void add_descendants(const std::string& dir, int depth, std::vector<std::string>& out) {
  if (depth > 8) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> children;
  while (const dirent* e = ::readdir(d))
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      children.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  for (const std::string& c : children) {
    add_descendants(c, depth + 1, out);
    out.push_back(c);
  }
}

std::vector<std::string> descendant_dirs(const std::string& dir) {
  std::vector<std::string> out;
  add_descendants(dir, 1, out);
  return out;
}

std::optional<int64_t> read_cgroup_int(const std::string& path) {
  auto text = read_cgroup_file(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  int64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

std::optional<int64_t> read_cgroup_key(const std::string& path, const std::string& key) {
  auto text = read_cgroup_file(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

std::string v2_enable_line(const std::string& dir) {
  auto offered = read_cgroup_file(dir + "/cgroup.controllers");
  std::istringstream in(offered ? *offered : "");
  std::string c, line;
  while (in >> c)
    if (c == "cpuset" || c == "memory" || c == "pids" || c == "cpu") line += (line.empty() ? "+" : " +") + c;
  return line;
}

}  // namespace tessel::agent
