#include "tessel/agent/cdi_spec_writer.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <spdlog/spdlog.h>

#include "tessel/agent/cdi_spec.hpp"
#include "tessel/agent/device_nodes.hpp"
#include "tessel/agent/durable_file.hpp"

namespace tessel::agent {

Status check_cdi_spec_dir(const std::string& dir) {
  if (dir.empty() || dir[0] != '/')
    return Error::invalid("--cdi-spec-dir " + dir + ": must be an absolute path", "cdi-spec-dir");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return Error::invalid("--cdi-spec-dir " + dir + ": " + std::strerror(errno), "cdi-spec-dir");
  if (!S_ISDIR(st.st_mode)) return Error::invalid("--cdi-spec-dir " + dir + ": not a directory", "cdi-spec-dir");
  return ok_status();
}

std::string cdi_spec_path(const std::string& dir, api::Vendor vendor) {
  return dir + "/tessel-" + cdi_class(vendor) + ".json";
}

std::optional<std::string> node_cdi_spec(const api::NodeInventory& inv, const std::string& dev_root,
                                         const std::string& sysfs_root) {
  CdiInput in;
  in.vendor = inv.vendor;
  in.dev_root = dev_root;
  in.devices = inv.devices;
  in.nodes = find_card_nodes(inv.vendor, dev_root, sysfs_root, inv.devices);
  // The same test container_devices() makes: a job's container gets the shared nodes present.
  for (const std::string& rel : shared_control_nodes(inv.vendor))
    if (::access(std::string(dev_root).append("/").append(rel).c_str(), F_OK) == 0) in.shared.push_back(rel);
  return cdi_spec_json(in);
}

Status CdiSpecSource::update(const api::NodeInventory& inv) {
  const std::string want = node_cdi_spec(inv, dev_root_, sysfs_root_).value_or("");
  if (on_disk_ == want) return ok_status();
  const std::string path = cdi_spec_path(dir_, inv.vendor);
  if (want.empty()) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("removing " + path);
  } else if (auto st = write_file_atomic(path, want, 0644); !st) {
    return st.error().wrap("writing " + path);
  }
  if (want.empty() && on_disk_ && !on_disk_->empty()) spdlog::info("CDI spec: no cards with nodes; removed {}", path);
  if (!want.empty()) spdlog::info("CDI spec: wrote {}", path);
  on_disk_ = want;
  return ok_status();
}

Result<api::NodeInventory> CdiSpecSource::read() {
  auto inv = inner_.read();
  if (!inv) return inv;
  if (auto st = update(*inv); !st) {
    if (st.error().message != last_error_)
      spdlog::warn("CDI spec: {} (the agent runs on without it)", st.error().message);
    last_error_ = st.error().message;
  } else {
    last_error_.clear();
  }
  return inv;
}

}  // namespace tessel::agent
