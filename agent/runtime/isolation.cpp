#include "tessel/agent/isolation.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include <spdlog/spdlog.h>

#include "tessel/agent/cgroup_files.hpp"
#include "tessel/agent/cpu_choice.hpp"
#include "tessel/agent/device_nodes.hpp"
#include "tessel/agent/state_dir.hpp"

namespace tessel::agent {

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string join(const std::string& dir, const std::string& rel) {
  if (rel.empty() || rel == "/") return dir;
  return dir + (rel[0] == '/' ? "" : "/") + rel;
}

// mkdir -p of `rel` below `top` (which must exist). v1 cpuset: each new level gets its
// parent's CPUs and memory nodes (a new v1 cpuset has none).
Status make_dirs(const std::string& top, const std::string& rel, bool cpuset) {
  std::string dir = top;
  std::istringstream parts(rel);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    const std::string parent = dir;
    dir += "/" + part;
    if (auto st = make_dir(dir); !st) return st;
    if (!cpuset) continue;
    for (const char* f : {"cpuset.mems", "cpuset.cpus"}) {
      auto mine = read_cgroup_file(dir + "/" + f);
      if (mine && !trimmed(*mine).empty()) continue;
      auto theirs = read_cgroup_file(parent + "/" + f);
      if (!theirs) return theirs.error();
      if (auto st = write_cgroup_file(dir + "/" + f, trimmed(*theirs)); !st) return st;
    }
  }
  return ok_status();
}

// Makes and removes a child, as a task's cgroup will be.
Status try_child(const std::map<std::string, std::string>& bases, bool device_program) {
  TaskCgroup probe;
  probe.version = bases.count("") ? CgroupVersion::v2 : CgroupVersion::v1;
  for (const auto& [controller, base] : bases) probe.dirs[controller] = base + "/.probe-" + std::to_string(::getpid());
  if (probe.version == CgroupVersion::v2 && device_program) probe.deny = {{'c', 0, 0}};  // bpf(2) works here.
  Status st = create_task_cgroup(probe);
  if (st) st = remove_task_cgroup(probe);
  return st;
}

Result<std::map<std::string, std::string>> open_v1(const IsolationConfig& cfg) {
  std::map<std::string, std::string> bases;
  for (const std::string& c : v1_controllers()) {
    const std::string top = cfg.cgroup_root + "/" + c;
    if (!path_exists(top + "/cgroup.procs")) {
      std::string why = "cgroup v1 controller ";
      why += c;
      why += " is not mounted at ";
      return Error{why + top};
    }
    const std::string own = own_cgroup_path(cfg.self_cgroup, c).value_or("/");
    if (auto st = make_dirs(top, own + "/" + cfg.subtree, c == "cpuset"); !st) return st.error();
    bases[c] = join(top, own) + "/" + cfg.subtree;
  }
  return bases;
}

Result<std::map<std::string, std::string>> open_v2(const IsolationConfig& cfg) {
  const std::string own_rel = own_cgroup_path(cfg.self_cgroup, "").value_or("/");
  const std::string own = join(cfg.cgroup_root, own_rel);
  if (!path_exists(own + "/cgroup.controllers")) return Error{"no cgroup2 directory at " + own};
  // No internal processes: what runs in <own> (the agent, and supervisors it started
  // before a restart) moves to the leaf <own>/agent before controllers are enabled.
  if (own_rel != "/" && cfg.self_pid > 0) {
    if (auto st = make_dir(own + "/agent"); !st) return st.error();
    auto procs = read_cgroup_file(own + "/cgroup.procs");
    std::istringstream in(procs ? *procs : "");
    int pid = 0;
    while (in >> pid)
      if (auto st = write_cgroup_file(own + "/agent/cgroup.procs", std::to_string(pid)); !st)
        return st.error().wrap("moving the agent into its leaf (Delegate=yes in its unit?)");
  }
  const std::string base = own + "/" + cfg.subtree;
  if (const std::string line = v2_enable_line(own); !line.empty())
    if (auto st = write_cgroup_file(own + "/cgroup.subtree_control", line); !st)
      return st.error().wrap("enabling controllers (Delegate=yes in its unit?)");
  if (auto st = make_dir(base); !st) return st.error();
  if (const std::string line = v2_enable_line(base); !line.empty())
    if (auto st = write_cgroup_file(base + "/cgroup.subtree_control", line); !st) return st.error();
  return std::map<std::string, std::string>{{"", base}};
}

}  // namespace

std::optional<std::string> own_cgroup_path(const std::string& self_cgroup, const std::string& controller) {
  std::istringstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controller.empty()) {
      if (line.compare(0, a, "0") == 0 && controllers.empty()) return path;
      continue;
    }
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == controller) return path;
  }
  return std::nullopt;
}

Result<std::unique_ptr<Isolation>> Isolation::open(const IsolationConfig& cfg, HostShape host) {
  if (cfg.mode == "none") return std::unique_ptr<Isolation>(new Isolation(cfg, std::move(host), "none", {}));
  if (cfg.subtree.empty() || cfg.subtree.find("..") != std::string::npos || cfg.subtree[0] == '/')
    return Error::invalid("--cgroup-subtree: must be a relative path without '..'");
  std::string kind = cfg.mode;
  if (kind == "auto") {
    if (path_exists(cfg.cgroup_root + "/cgroup.controllers"))
      kind = "cgroup2";
    else if (path_exists(cfg.cgroup_root + "/memory/cgroup.procs"))
      kind = "cgroup1";
    else
      return Error{"no cgroup hierarchy at " + cfg.cgroup_root + " (neither cgroup2 nor v1 controllers)"};
  }
  if (kind != "cgroup1" && kind != "cgroup2")
    return Error::invalid("--isolation: must be auto, cgroup1, cgroup2 or none");
  auto bases = kind == "cgroup1" ? open_v1(cfg) : open_v2(cfg);
  if (!bases) return bases.error();
  if (auto st = try_child(*bases, cfg.try_device_program); !st) return st.error().wrap("making a task cgroup");
  if (kind == "cgroup2") {  // Said once: tasks then run without that fence.
    const std::string line = v2_enable_line(bases->at(""));
    for (const char* controller : {"cpuset", "memory"})
      if (line.find(controller) == std::string::npos)
        spdlog::warn("task isolation: the {} controller is not enabled for {}: tasks get no {} of their own",
                     controller, bases->at(""), std::string(controller) == "cpuset" ? "cpuset" : "memory limit");
  }
  return std::unique_ptr<Isolation>(new Isolation(cfg, std::move(host), kind, std::move(*bases)));
}

std::map<std::string, std::string> Isolation::task_dirs(const std::string& id) const {
  std::map<std::string, std::string> dirs;
  for (const auto& [controller, base] : bases_) {
    std::string dir = base;
    dirs[controller] = dir.append("/").append(id);
  }
  return dirs;
}

Result<std::optional<TaskCgroup>> Isolation::plan(const api::Assignment& a, const api::NodeInventory& inv,
                                                  const std::set<int>& taken) const {
  if (!enabled()) return std::optional<TaskCgroup>();
  if (!is_safe_task_id(a.id)) return Error::invalid("assignment id '" + a.id + "' is not a safe cgroup name");
  TaskCgroup cg;
  cg.version = kind_ == "cgroup1" ? CgroupVersion::v1 : CgroupVersion::v2;
  cg.dirs = task_dirs(a.id);
  // On cgroup2 a limit needs its controller in the subtree (a hybrid hierarchy's cgroup2
  // mount has none: its controllers are bound to v1).
  auto missing = [&](const char* controller) {
    return cg.version == CgroupVersion::v2 && v2_enable_line(bases_.at("")).find(controller) == std::string::npos;
  };
  // Every assignment from a scheduler that places CPUs and memory carries them: where
  // the controller is not enabled (open() said so), the task runs without that fence.
  if (a.cpus > 0 && !missing("cpuset")) {
    std::vector<int> card_numa;
    for (const api::Device& d : inv.devices)
      if (std::find(a.indices.begin(), a.indices.end(), d.index) != a.indices.end())
        card_numa.push_back(d.numa_node.value_or(-1));
    auto cpus = choose_cpus(a.cpus, host_.cpus, taken, host_.numa, card_numa);
    if (!cpus) return cpus.error();
    cg.cpus = std::move(*cpus);
  }
  cg.memory_limit_mib = missing("memory") ? 0 : a.memory_mib;
  cg.pids_max = missing("pids") ? 0 : cfg_.pids_max;
  cg.deny = other_cards_rules(find_card_nodes(inv.vendor, cfg_.dev_root, cfg_.sysfs_root, inv.devices), a.indices,
                              cfg_.dev_root);
  return std::optional<TaskCgroup>(std::move(cg));
}

std::vector<std::string> Isolation::sweep(const std::set<std::string>& keep) const {
  std::vector<std::string> cleared;
  std::set<std::string> ids;
  for (const auto& [controller, base] : bases_) {
    DIR* d = ::opendir(base.c_str());
    if (!d) continue;
    while (const dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') ids.insert(e->d_name);
    ::closedir(d);
  }
  for (const std::string& id : ids) {
    if (keep.count(id)) continue;
    if (auto st = clear(id); !st) {
      spdlog::warn("task cgroup {}: {}", id, st.error().message);
      continue;
    }
    cleared.push_back(id);
  }
  return cleared;
}

Status Isolation::clear(const std::string& id) const {
  if (!enabled() || !is_safe_task_id(id)) return ok_status();
  TaskCgroup cg;
  cg.version = kind_ == "cgroup1" ? CgroupVersion::v1 : CgroupVersion::v2;
  cg.dirs = task_dirs(id);
  const Status killed = kill_task_cgroup(cg);
  const Status removed = remove_task_cgroup(cg);
  return killed ? removed : killed;
}

}  // namespace tessel::agent
