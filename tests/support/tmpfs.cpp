#include "tmpfs.hpp"

#include <sys/mount.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace tessel::testkit {

TmpfsMount::TmpfsMount(std::string path, const std::string& size) : path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  const std::string options = "size=" + size + ",mode=0755";
  ok_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
  if (!ok_) error_ = std::strerror(errno);
}

TmpfsMount::~TmpfsMount() {
  if (ok_) ::umount2(path_.c_str(), MNT_DETACH);
}

void fill_until_full(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::vector<char> block(4096, 0);
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
  }
  std::fclose(f);
}

}  // namespace tessel::testkit
