#include "tessel/agent/host_shape.hpp"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <dirent.h>
#include <sstream>

#include "tessel/agent/cgroup_files.hpp"

namespace tessel::agent {

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

static int64_t mem_total_mib(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemTotal:") return kib / 1024;
  }
  return 0;
}

HostShape host_shape(const std::string& sysfs_root, const std::vector<int>& allowed, const std::string& meminfo) {
  HostShape s;
  s.cpus = allowed;
  s.memory_mib = mem_total_mib(meminfo);
  const std::string nodes = sysfs_root + "/devices/system/node";
  if (DIR* d = ::opendir(nodes.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      const bool numbered =
          name.size() > 4 && name.size() <= 8 && name.compare(0, 4, "node") == 0 &&
          std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      if (!numbered) continue;
      std::string path = nodes;
      auto text = read_cgroup_file(path.append("/").append(name).append("/cpulist"));
      if (!text) continue;
      auto cpus = api::parse_cpu_list(*text);
      if (!cpus) continue;
      api::NumaNode n;
      n.id = std::stoi(name.substr(4));
      if (n.id > 1023) continue;
      for (int c : *cpus)
        if (std::binary_search(allowed.begin(), allowed.end(), c)) n.cpus.push_back(c);
      if (!n.cpus.empty()) s.numa.push_back(std::move(n));
    }
    ::closedir(d);
  }
  std::sort(s.numa.begin(), s.numa.end(), [](const api::NumaNode& a, const api::NumaNode& b) { return a.id < b.id; });
  return s;
}

std::optional<int> card_numa_node(const std::string& sysfs_root, const std::string& bus_id) {
  std::string id = bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  if (id.find('/') != std::string::npos || id.find("..") != std::string::npos || id.empty()) return std::nullopt;
  const size_t colon = id.find(':');
  if (colon == 8) id = id.substr(4);  // nvidia-smi's 00000000:33:00.0.
  auto n = read_cgroup_int(sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  if (!n || *n < 0 || *n > 1023) return std::nullopt;
  return static_cast<int>(*n);
}

Result<api::NodeInventory> HostShapeSource::read() {
  auto inv = inner_.read();
  if (!inv) return inv;
  inv->cpus = static_cast<int>(shape_.cpus.size());
  inv->memory_mib = shape_.memory_mib;
  inv->numa = shape_.numa;
  inv->isolation = isolation_;
  inv->containers = containers_;
  for (api::Device& d : inv->devices)
    if (!d.bus_id.empty()) d.numa_node = card_numa_node(sysfs_root_, d.bus_id);
  return inv;
}

}  // namespace tessel::agent
