#include "tessel/agent/device_nodes.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace tessel::agent {

namespace {

struct Pattern {
  const char* dir;     // Under the dev root ("" for the root itself).
  const char* prefix;  // Then decimal digits: the card's number.
  int offset;          // The number minus the card's index.
};

std::vector<Pattern> patterns(api::Vendor v) {
  using api::Vendor;
  switch (v) {
    case Vendor::habana: return {{"accel", "accel", 0}, {"accel", "accel_controlD", 0}};
    case Vendor::nvidia: return {{"", "nvidia", 0}};
    case Vendor::amd:
    case Vendor::intel:
    case Vendor::mthreads: return {{"dri", "card", 0}, {"dri", "renderD", 128}};
    case Vendor::ascend: return {{"", "davinci", 0}};
    case Vendor::neuron: return {{"", "neuron", 0}};
    case Vendor::tpu: return {{"", "accel", 0}};
    case Vendor::cambricon: return {{"", "cambricon_dev", 0}};
  }
  return {};
}

bool uses_drm(api::Vendor v) { return v == api::Vendor::amd || v == api::Vendor::intel || v == api::Vendor::mthreads; }

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// "accel12" with prefix "accel" -> 12; -1 when the rest is not all digits.
int number_after(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  int n = -1;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  auto [end, ec] = std::from_chars(b, e, n);
  return ec == std::errc() && end == e ? n : -1;
}

// DRM node name ("card1", "renderD129") -> card index, from each card's PCI device in sysfs.
std::map<std::string, int> drm_names_by_bus(const std::string& sysfs_root, const std::vector<api::Device>& devices) {
  std::map<std::string, int> out;
  for (const api::Device& d : devices) {
    if (d.bus_id.empty() || d.bus_id.find('/') != std::string::npos) continue;
    for (const std::string& name : list_dir(sysfs_root + "/bus/pci/devices/" + d.bus_id + "/drm"))
      if (name != "." && name != "..") out[name] = d.index;
  }
  return out;
}

}  // namespace

std::vector<CardNode> find_card_nodes(api::Vendor vendor, const std::string& dev_root, const std::string& sysfs_root,
                                      const std::vector<api::Device>& devices) {
  const std::map<std::string, int> by_bus =
      uses_drm(vendor) ? drm_names_by_bus(sysfs_root, devices) : std::map<std::string, int>{};
  std::vector<CardNode> out;
  for (const Pattern& p : patterns(vendor)) {
    const std::string dir = std::string(p.dir).empty() ? dev_root : dev_root + "/" + p.dir;
    const std::string rel = std::string(p.dir).empty() ? "" : std::string(p.dir) + "/";
    for (const std::string& name : list_dir(dir)) {
      const int n = number_after(name, p.prefix);
      if (n < 0) continue;
      int index = n - p.offset;
      if (!by_bus.empty()) {
        auto it = by_bus.find(name);
        index = it == by_bus.end() ? -1 : it->second;
      }
      out.push_back({rel + name, index < 0 ? -1 : index});
    }
  }
  std::sort(out.begin(), out.end(), [](const CardNode& a, const CardNode& b) { return a.path < b.path; });
  return out;
}

const std::vector<std::string>& shared_control_nodes(api::Vendor vendor) {
  using api::Vendor;
  static const std::vector<std::string> none,
      nvidia = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}, amd = {"kfd"},
      ascend = {"davinci_manager", "devmm_svm", "hisi_hdc"}, cambricon = {"cambricon_ctl"};
  switch (vendor) {
    case Vendor::nvidia: return nvidia;
    case Vendor::amd: return amd;
    case Vendor::ascend: return ascend;
    case Vendor::cambricon: return cambricon;
    default: return none;
  }
}

std::vector<DeviceRule> other_cards_rules(const std::vector<CardNode>& nodes, const std::vector<int>& task_indices,
                                          const std::string& dev_root) {
  std::vector<DeviceRule> out;
  for (const CardNode& n : nodes) {
    if (n.card_index >= 0 && std::find(task_indices.begin(), task_indices.end(), n.card_index) != task_indices.end())
      continue;
    struct stat st {};
    if (::stat((dev_root + "/" + n.path).c_str(), &st) != 0) continue;
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) continue;
    DeviceRule r{S_ISCHR(st.st_mode) ? 'c' : 'b', static_cast<int64_t>(major(st.st_rdev)),
                 static_cast<int64_t>(minor(st.st_rdev))};
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

}  // namespace tessel::agent
