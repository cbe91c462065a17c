#include "tessel/agent/task_cgroup.hpp"

#include <signal.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/json_int.hpp"
#include "tessel/agent/cgroup_files.hpp"
#include "tessel/agent/cgroup_versions.hpp"

namespace tessel::agent {

using nlohmann::json;
using namespace cgroup_detail;

std::string cgroup_detail::parent_of(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

int64_t cgroup_detail::mib_rounded_up(int64_t bytes) { return (bytes + (1 << 20) - 1) >> 20; }

std::string v1_device_rule(const DeviceRule& r) {
  return std::string(1, r.type) + " " + std::to_string(r.major) + ":" + std::to_string(r.minor) + " rwm";
}

const std::vector<std::string>& v1_controllers() {
  static const std::vector<std::string> c = {"cpuset", "memory", "devices", "pids", "cpuacct", "freezer"};
  return c;
}

json to_json(const TaskCgroup& cg) {
  json deny = json::array();
  for (const DeviceRule& r : cg.deny) deny.push_back({std::string(1, r.type), r.major, r.minor});
  return {{"version", cg.version == CgroupVersion::v1 ? 1 : 2},
          {"dirs", cg.dirs},
          {"cpus", cg.cpus},
          {"memory_limit_mib", cg.memory_limit_mib},
          {"pids_max", cg.pids_max},
          {"deny", deny},
          {"leaf", cg.leaf}};
}

Result<TaskCgroup> task_cgroup_from_json(const json& j) {
  return api::read_json(Error::invalid("cgroup", "cgroup"), [&](api::JsonInts& ints) -> Result<TaskCgroup> {
    TaskCgroup cg;
    const int version = ints.at<int>(j, "version");
    if (version != 1 && version != 2) return Error::invalid("cgroup.version: must be 1 or 2", "cgroup.version");
    cg.version = version == 1 ? CgroupVersion::v1 : CgroupVersion::v2;
    cg.dirs = j.at("dirs").get<std::map<std::string, std::string>>();
    if (cg.dirs.empty()) return Error::invalid("cgroup.dirs: must not be empty", "cgroup.dirs");
    for (const auto& [controller, dir] : cg.dirs)
      if (dir.empty() || dir[0] != '/' || dir.find("/../") != std::string::npos)
        return Error::invalid("cgroup.dirs: '" + dir + "' is not an absolute path", "cgroup.dirs");
    cg.cpus = ints.list_at<int>(j, "cpus");
    for (int c : cg.cpus)
      if (c < 0 || c > api::kMaxCpuId) return Error::invalid("cgroup.cpus: CPUs are 0-65535", "cgroup.cpus");
    cg.memory_limit_mib = ints.at<int64_t>(j, "memory_limit_mib");
    cg.pids_max = ints.at<int64_t>(j, "pids_max");
    if (cg.memory_limit_mib < 0 || cg.memory_limit_mib > api::kMaxTaskMemoryMib || cg.pids_max < 0)
      return Error::invalid("cgroup: memory_limit_mib and pids_max must be in range", "cgroup");
    for (const json& r : j.at("deny")) {
      const std::string type = r.at(0).get<std::string>();
      if (type != "c" && type != "b") return Error::invalid("cgroup.deny: type must be c or b", "cgroup.deny");
      // Device numbers: 12-bit major, 20-bit minor (what the kernel's dev_t holds).
      const auto major = ints.of<uint32_t>(r.at(1), "deny"), minor = ints.of<uint32_t>(r.at(2), "deny");
      if (major >= (1U << 12) || minor >= (1U << 20))
        return Error::invalid("cgroup.deny: device numbers out of range", "cgroup.deny");
      cg.deny.push_back({type[0], major, minor});
    }
    cg.leaf = j.value("leaf", "");  // Absent in the plans of agents before it.
    if (!cg.leaf.empty() && (cg.version != CgroupVersion::v2 || cg.leaf != kV2RanksLeaf))
      return Error::invalid(std::string("cgroup.leaf: must be \"\" or, on v2, \"") + kV2RanksLeaf + "\"",
                            "cgroup.leaf");
    return cg;
  });
}

Status create_task_cgroup(const TaskCgroup& cg) {
  for (const auto& [controller, dir] : cg.dirs) {
    if (auto st = make_dir(dir); !st) {
      (void)remove_task_cgroup(cg);
      return st;
    }
  }
  Status st = cg.version == CgroupVersion::v1 ? configure_v1(cg) : configure_v2(cg);
  if (!st) (void)remove_task_cgroup(cg);
  return st;
}

Result<std::vector<int>> open_task_cgroup_procs(const TaskCgroup& cg) {
  std::vector<int> fds;
  for (const auto& [controller, dir] : cg.dirs) {
    const std::string path = (cg.leaf.empty() ? dir : dir + "/" + cg.leaf) + "/cgroup.procs";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_APPEND);
    if (fd < 0) {
      Error e{"open " + path + ": " + std::strerror(errno)};
      for (int f : fds) ::close(f);
      return e;
    }
    fds.push_back(fd);
  }
  return fds;
}

bool join_task_cgroup(const std::vector<int>& procs_fds) {
  for (int fd : procs_fds)  // "0": the writing process itself.
    if (::write(fd, "0", 1) != 1) return false;
  return true;
}

std::vector<int> task_cgroup_pids(const TaskCgroup& cg) {
  std::vector<int> pids;
  auto it = cg.dirs.find(cg.version == CgroupVersion::v1 ? "freezer" : "");
  if (it == cg.dirs.end()) it = cg.dirs.begin();
  if (it == cg.dirs.end()) return pids;
  std::vector<std::string> dirs = descendant_dirs(it->second);  // Its containers' cgroups.
  dirs.push_back(it->second);
  for (const std::string& dir : dirs) {
    auto text = read_cgroup_file(dir + "/cgroup.procs");
    if (!text) continue;
    std::istringstream in(*text);
    int pid = 0;
    while (in >> pid) pids.push_back(pid);
  }
  return pids;
}

static void pause_ms(int ms) {
  timespec ts{0, static_cast<long>(ms) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

Status kill_task_cgroup(const TaskCgroup& cg, int wait_ms) {
  constexpr int kStepMs = 5;
  const bool v1 = cg.version == CgroupVersion::v1;
  bool killed_by_kernel = !v1 && kill_v2(cg);  // All at once, forks racing it included.
  for (int waited = 0;; waited += kStepMs) {
    const std::vector<int> pids = task_cgroup_pids(cg);
    if (pids.empty()) return ok_status();
    if (waited >= wait_ms)
      return Error{std::to_string(pids.size()) + " process(es) still in the task's cgroup after " +
                   std::to_string(wait_ms) + " ms (pid " + std::to_string(pids.front()) + ")"};
    if (!killed_by_kernel) {
      // Frozen, none of them can fork while we kill them; a frozen process dies once thawed.
      const bool frozen = v1 ? freeze_v1(cg, true) : freeze_v2(cg, true);
      for (int pid : task_cgroup_pids(cg))
        if (pid > 1) ::kill(pid, SIGKILL);
      if (frozen) (void)(v1 ? freeze_v1(cg, false) : freeze_v2(cg, false));
    }
    pause_ms(kStepMs);
    killed_by_kernel = !v1 && kill_v2(cg);
  }
}

TaskUsage read_task_usage(const TaskCgroup& cg) {
  return cg.version == CgroupVersion::v1 ? usage_v1(cg) : usage_v2(cg);
}

Status remove_task_cgroup(const TaskCgroup& cg) {
  Status out = ok_status();
  for (const auto& [controller, dir] : cg.dirs) {
    for (const std::string& child : descendant_dirs(dir))  // Those its containers' runtime left.
      if (auto st = remove_dir(child); !st && out) out = st;
    if (auto st = remove_dir(dir); !st && out) out = st;
  }
  return out;
}

}  // namespace tessel::agent
