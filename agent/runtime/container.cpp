#include "tessel/agent/container.hpp"

#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "tessel/agent/device_nodes.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/base/random.hpp"

namespace tessel::agent {

namespace {

constexpr int64_t kPodmanDefaultLimit = 1'048'576;  // podman's own nofile/nproc.

// The agent's hard limit of `resource`, at most podman's default.
int64_t hard_limit(int resource) {
  rlimit rl{};
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_max == RLIM_INFINITY) return kPodmanDefaultLimit;
  return std::min<int64_t>(static_cast<int64_t>(rl.rlim_max), kPodmanDefaultLimit);
}

// /proc/sys/kernel/pid_max (podman's default when it cannot be read).
int64_t kernel_pid_max() {
  std::ifstream in("/proc/sys/kernel/pid_max");
  int64_t n = 0;
  return in >> n && n > 0 ? n : kPodmanDefaultLimit;
}

std::optional<std::string> real_path(const std::string& p, std::string& why) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  return std::string(buf);
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool under_dir(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

}  // namespace

std::vector<std::string> ContainerRuntime::podman_argv() const {
  // cgroupfs: the agent owns its cgroups (no systemd needed); file events: no journald.
  return {podman, "--runtime", oci_runtime, "--cgroup-manager", "cgroupfs", "--events-backend", "file"};
}

std::optional<std::string> parse_podman_version(const std::string& out) {
  const std::string prefix = "podman version ";
  if (out.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string v = out.substr(prefix.size());
  v = v.substr(0, v.find_first_of(" \r\n"));
  if (v.empty() || v.size() > 32 ||
      v.find_first_not_of("0123456789.-+~abcdefghijklmnopqrstuvwxyz") != std::string::npos)
    return std::nullopt;
  return v;
}

std::string default_oci_runtime(const std::string& cgroup_root) {
  return ::access((cgroup_root + "/cgroup.controllers").c_str(), F_OK) == 0 ? "crun" : "runc";
}

std::optional<std::string> capability_name(const std::string& name) {
  // capabilities(7), Linux 6.1.
  static const std::set<std::string> known = {"audit_control",   "audit_read",   "audit_write",
                                              "block_suspend",   "bpf",          "checkpoint_restore",
                                              "chown",           "dac_override", "dac_read_search",
                                              "fowner",          "fsetid",       "ipc_lock",
                                              "ipc_owner",       "kill",         "lease",
                                              "linux_immutable", "mac_admin",    "mac_override",
                                              "mknod",           "net_admin",    "net_bind_service",
                                              "net_broadcast",   "net_raw",      "perfmon",
                                              "setfcap",         "setgid",       "setpcap",
                                              "setuid",          "sys_admin",    "sys_boot",
                                              "sys_chroot",      "sys_module",   "sys_nice",
                                              "sys_pacct",       "sys_ptrace",   "sys_rawio",
                                              "sys_resource",    "sys_time",     "sys_tty_config",
                                              "syslog",          "wake_alarm"};
  std::string n = name;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n.rfind("cap_", 0) == 0) n.erase(0, 4);
  if (!known.count(n)) return std::nullopt;
  return n;
}

Result<std::optional<ContainerRuntime>> detect_container_runtime(const ContainerConfig& cfg, CommandRunner& runner) {
  if (cfg.mode == "none") return std::optional<ContainerRuntime>{};
  if (cfg.mode != "auto" && cfg.mode != "runc" && cfg.mode != "crun")
    return Error::invalid("--container-runtime: must be auto, runc, crun or none", "container-runtime");
  ContainerRuntime rt;
  auto podman = resolve_executable("podman", cfg.podman, cfg.path_env);
  if (!podman) return podman.error();
  rt.podman = podman->string();
  auto out = runner.run({rt.podman, "--version"}, std::chrono::seconds(30));
  if (!out) return out.error().wrap("podman --version");
  auto version = parse_podman_version(out->out);
  if (!version) return Error{"podman --version printed no version: '" + out->out.substr(0, 80) + "'"};
  rt.version = *version;
  rt.oci_runtime = cfg.mode == "auto" ? default_oci_runtime(cfg.cgroup_root) : cfg.mode;
  rt.cgroup_root = cfg.cgroup_root;
  const std::string runtime_path =
      cfg.path_env.empty() ? "/usr/bin:/usr/sbin:/bin:/sbin" : cfg.path_env + ":/usr/sbin:/sbin";
  if (auto r = resolve_executable(rt.oci_runtime, rt.oci_runtime, runtime_path); !r) return r.error();
  for (const char* init : {"/usr/libexec/podman/catatonit", "/usr/bin/catatonit", "/usr/libexec/catatonit/catatonit"})
    if (::access(init, X_OK) == 0) {
      rt.init_path = init;
      break;
    }
  for (const std::string& dir : cfg.allow_mounts) {
    std::string why;
    auto real = real_path(dir, why);
    if (!real) return Error::invalid(std::string("--allow-mount ").append(dir).append(": ").append(why), "allow-mount");
    if (!is_dir(*real)) return Error::invalid("--allow-mount " + dir + ": not a directory", "allow-mount");
    rt.allow_mounts.push_back(*real);
  }
  if (!cfg.registry_auth.empty() && ::access(cfg.registry_auth.c_str(), R_OK) != 0)
    return Error::invalid("--registry-auth " + cfg.registry_auth + ": " + std::strerror(errno), "registry-auth");
  rt.registry_auth = cfg.registry_auth;
  for (const std::string& cap : cfg.cap_add) {
    auto name = capability_name(cap);
    if (!name) return Error::invalid("--container-cap-add " + cap + ": not a Linux capability", "container-cap-add");
    rt.cap_add.push_back(*name);
  }
  rt.pull_timeout_s = cfg.pull_timeout_s;
  rt.nofile = hard_limit(RLIMIT_NOFILE);
  // podman's own process limit is at most the kernel's pid_max (32768 here): a container
  // asking more fails in runc ("error setting rlimit type 6: operation not permitted").
  rt.nproc = std::min(hard_limit(RLIMIT_NPROC), kernel_pid_max());
  return std::optional<ContainerRuntime>(std::move(rt));
}

Result<std::vector<api::Mount>> resolve_mounts(const std::vector<api::Mount>& mounts,
                                               const std::vector<std::string>& allowed) {
  std::vector<api::Mount> out;
  for (const api::Mount& m : mounts) {
    std::string why;
    auto real = real_path(m.source, why);
    if (!real) return Error{"mount " + m.source + ": " + why};
    const bool ok =
        std::any_of(allowed.begin(), allowed.end(), [&](const std::string& d) { return under_dir(*real, d); });
    if (!ok) {
      const std::string list = allowed.empty() ? "none" : join(allowed, ", ");
      return Error{"mount " + m.source + ": " + *real +
                   " is not under a directory this node allows (--allow-mount: " + list + ")"};
    }
    if (real->find_first_of(",:") != std::string::npos)
      return Error{"mount " + m.source + ": its real path " + *real + " contains ',' or ':'"};
    out.push_back({*real, m.target, m.read_only});
  }
  return out;
}

std::vector<ContainerDevice> container_devices(api::Vendor vendor, const std::string& dev_root,
                                               const std::string& sysfs_root, const std::vector<api::Device>& devices,
                                               const std::vector<int>& indices) {
  std::vector<ContainerDevice> out;
  const auto under = [](const std::string& root, const std::string& rel) {
    return std::string(root).append("/").append(rel);
  };
  for (const CardNode& n : find_card_nodes(vendor, dev_root, sysfs_root, devices))
    if (std::find(indices.begin(), indices.end(), n.card_index) != indices.end())
      out.push_back({under(dev_root, n.path), under("/dev", n.path)});
  for (const std::string& shared : shared_control_nodes(vendor))
    if (::access(under(dev_root, shared).c_str(), F_OK) == 0)
      out.push_back({under(dev_root, shared), under("/dev", shared)});
  return out;
}

bool stays_on_node(const std::string& name) {
  return name == "PATH" || name == "HOME" || name == "SHELL" || name == "TMPDIR";
}

std::string container_name(const std::string& assignment_id, int rank, const std::string& suffix) {
  std::string id = assignment_id;
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  std::string name = "tessel-" + id + "-r" + std::to_string(rank);
  if (!suffix.empty()) name += "-" + suffix;
  return name;
}

std::string container_cgroup_parent(const TaskCgroup& cg, const std::string& cgroup_root) {
  if (cg.version == CgroupVersion::v1) return kContainerCgroupParent;
  auto it = cg.dirs.find("");
  if (it == cg.dirs.end() || !under_dir(it->second, cgroup_root) || it->second.size() <= cgroup_root.size()) return "";
  return it->second.substr(cgroup_root.size());  // "/system.slice/tessel-agent.service/tessel/<id>".
}

std::vector<std::string> podman_run_argv(const PodmanRun& r) {
  std::vector<std::string> a = r.podman;
  const auto add = [&](std::initializer_list<std::string> items) { a.insert(a.end(), items); };
  add({"run", "--rm", "--name", r.name, "--pull", "never", "--log-driver", "none", "--network", "host"});
  if (r.shm_size_mib > 0)
    add({"--ipc", "private", "--shm-size", std::to_string(r.shm_size_mib) + "m"});
  else
    add({"--ipc", "host"});
  if (!r.init_path.empty()) add({"--init", "--init-path", r.init_path});
  for (const std::string& cap : r.cap_add) add({"--cap-add", cap});
  if (r.uid) add({"--user", std::to_string(*r.uid) + ":" + std::to_string(r.gid.value_or(*r.uid))});
  for (int g : r.groups)
    if (!r.gid || g != *r.gid) add({"--group-add", std::to_string(g)});
  if (r.nofile > 0) add({"--ulimit", "nofile=" + std::to_string(r.nofile) + ":" + std::to_string(r.nofile)});
  if (r.nproc > 0) add({"--ulimit", "nproc=" + std::to_string(r.nproc) + ":" + std::to_string(r.nproc)});
  if (!r.cpus.empty()) add({"--cpuset-cpus", cpu_list(r.cpus)});
  if (!r.cgroup_parent.empty()) add({"--cgroups", "no-conmon", "--cgroup-parent", r.cgroup_parent});
  if (r.memory_mib > 0 && r.cgroup_parent.empty()) {
    const std::string m = std::to_string(r.memory_mib) + "m";
    add({"--memory", m, "--memory-swap", m});
  }
  if (r.pids_max > 0) add({"--pids-limit", std::to_string(r.pids_max)});
  for (const ContainerDevice& d : r.devices) add({"--device", d.host + ":" + d.inside});
  if (!r.workdir.empty())
    add({"--mount", "type=bind,source=" + r.workdir + ",destination=" + r.workdir, "--workdir", r.workdir});
  for (const api::Mount& m : r.mounts)
    add({"--mount", "type=bind,source=" + m.source + ",destination=" + m.target + (m.read_only ? ",ro=true" : "")});
  for (const std::string& n : r.env_names) add({"--env", n});
  // The image, then the job's argv: nothing after the image is podman's.
  a.push_back(r.image);
  a.insert(a.end(), r.command.begin(), r.command.end());
  return a;
}

Status containerize(LaunchPlan& plan, const api::Assignment& a, const api::NodeInventory& inv,
                    const ContainerRuntime& rt, const std::string& dev_root, const std::string& sysfs_root,
                    const std::vector<int>& groups) {
  if (plan.workdir.find_first_of(",:") != std::string::npos)
    return Error{"workdir " + plan.workdir + ": a container's workdir may not contain ',' or ':'"};
  // It is bind-mounted at its own path: never over the container's root or its /proc,
  // /sys or /dev.
  if (std::string w = plan.workdir; w.find_first_not_of('/') == std::string::npos || under_dir(w, "/proc") ||
                                    under_dir(w, "/sys") || under_dir(w, "/dev"))
    return Error{"workdir " + plan.workdir + ": a container's workdir may not be /, nor under /proc, /sys or /dev"};
  auto mounts = resolve_mounts(a.spec.mounts, rt.allow_mounts);
  if (!mounts) return mounts.error();
  PodmanRun run;
  run.podman = rt.podman_argv();
  run.image = a.spec.image;
  run.command = a.spec.command;
  run.uid = plan.uid;
  run.gid = plan.gid;
  run.groups = groups;
  run.workdir = plan.workdir;
  run.mounts = std::move(*mounts);
  run.devices = container_devices(inv.vendor, dev_root, sysfs_root, inv.devices, a.indices);
  run.shm_size_mib = a.spec.shm_size_mib;
  if (plan.cgroup) {
    run.cgroup_parent = container_cgroup_parent(*plan.cgroup, rt.cgroup_root);
    // The runtime's own device rules fence the container to its cards, and a devices
    // cgroup (v1) or device program (v2) above the container's could allow no more than
    // it (runc's first rule, "c *:* m", would be refused): podman and its containers stay
    // out of the task's device fence.
    if (!run.cgroup_parent.empty()) {
      plan.cgroup->dirs.erase("devices");
      plan.cgroup->deny.clear();
      if (plan.cgroup->version == CgroupVersion::v2) plan.cgroup->leaf = kV2RanksLeaf;
    }
    run.cpus = plan.cgroup->cpus;
    run.memory_mib = plan.cgroup->memory_limit_mib;
    run.pids_max = plan.cgroup->pids_max;
  }
  run.nofile = rt.nofile;
  run.nproc = rt.nproc;
  run.init_path = rt.init_path;
  run.cap_add = rt.cap_add;
  ContainerPlan c;
  c.podman = run.podman;
  c.image = a.spec.image;
  c.pull_always = a.spec.image_pull_always;
  c.pull_timeout_s = rt.pull_timeout_s;
  c.authfile = rt.registry_auth;
  // Job ids are a scheduler's: another scheduler's agent on this host (tests), or one
  // after a reset, may reuse them, and podman names are per host.
  auto suffix = random_hex(4);
  if (!suffix) return suffix.error().wrap("container name");
  for (size_t i = 0; i < plan.ranks.size(); ++i) {
    RankLaunch& r = plan.ranks[i];
    run.name = container_name(plan.assignment_id, static_cast<int>(i), *suffix);
    run.env_names.clear();
    for (const auto& [name, value] : r.env)
      if (!stays_on_node(name)) run.env_names.push_back(name);
    if (!r.cpus.empty()) run.cpus = r.cpus;  // The rank's share, nearest its card.
    r.argv = podman_run_argv(run);
    c.names.push_back(run.name);
  }
  plan.container = std::move(c);
  // podman runs as root (in the task's cgroup), the job's user is its --user; it works
  // in a directory of root's (the caller sets the plan's workdir to the task's dir).
  plan.uid.reset();
  plan.gid.reset();
  plan.user.clear();
  plan.workdir_as_user = false;
  return ok_status();
}

std::vector<int> user_groups(const std::string& user, int gid) {
  if (user.empty()) return {gid};
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (::getgrouplist(user.c_str(), static_cast<gid_t>(gid), groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    ::getgrouplist(user.c_str(), static_cast<gid_t>(gid), groups.data(), &n);
  }
  groups.resize(static_cast<size_t>(n));
  return {groups.begin(), groups.end()};
}

}  // namespace tessel::agent
