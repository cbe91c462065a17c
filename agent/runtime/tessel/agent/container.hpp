#pragma once
// Jobs in containers (issue 29): what the agent needs to run a task's ranks in the
// job's OCI image with podman, as root, the container's process as the job's user.
//
// At start the agent finds podman and chooses its OCI runtime (detect_container_runtime):
// crun on a pure cgroup v2 host, runc on cgroup v1 or hybrid hosts (where crun refuses
// to run); the node reports "podman 4.3.1, runc" in its inventory, or runs no images.
// For each task with an image it builds, per rank, the whole `podman run` argv
// (podman_run_argv: a vector, never a shell line) with
//   - only the task's cards' device nodes and the vendor's shared control nodes
//     (device_nodes.hpp, under --dev-root), at their usual /dev names;
//   - the rank's whole environment by name (-e NAME: values travel in podman's own
//     environment, not in its argv), but PATH, HOME, SHELL and TMPDIR, which are the
//     node's and would hide the image's own;
//   - host network; host IPC, or a private one with a /dev/shm of shm_size_mib;
//   - the workdir bind-mounted at the same path and used as the working directory;
//     the job's mounts, each source resolved (symlinks, "..") and under an allowed
//     directory (--allow-mount), else the launch fails naming it (resolve_mounts);
//   - the container's cgroup below the task's (task_cgroup.hpp: kContainerCgroupParent
//     on v1, kV2RanksLeaf on v2), so that the task's limits, use and kill hold it;
//     without a task cgroup, the task's CPUs, memory (no swap past it) and pids limit as
//     podman's limits; and
//     open-file and process limits no higher than the agent's own hard limits (and
//     processes no more than the kernel's pid_max, podman's own limit).
// Thread-safety: pure functions; detect_container_runtime runs podman once, at start.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/task_files.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"

namespace tessel::agent {

struct ContainerConfig {
  std::string mode = "auto";      // --container-runtime: auto | runc | crun | none.
  std::string podman = "podman";  // --podman: path or name (looked up in PATH).
  std::string cgroup_root = "/sys/fs/cgroup";
  std::vector<std::string> allow_mounts;  // --allow-mount DIR (repeatable).
  std::string registry_auth;              // --registry-auth FILE (podman's auth.json).
  int64_t pull_timeout_s = 600;           // --image-pull-timeout.
  std::vector<std::string> cap_add;       // --container-cap-add (repeatable): "sys_nice".
  std::string path_env;                   // Where names are looked up (the agent's PATH).
};

// What the node runs images with.
struct ContainerRuntime {
  std::string podman;                          // Absolute path.
  std::string version;                         // "4.3.1".
  std::string oci_runtime;                     // "runc" or "crun".
  std::string init_path;                       // catatonit (podman --init), "" when not found.
  std::string cgroup_root = "/sys/fs/cgroup";  // A v2 task's --cgroup-parent is its dir below it.
  std::vector<std::string> allow_mounts;       // Resolved real paths.
  std::string registry_auth;
  int64_t pull_timeout_s = 600;
  int64_t nofile = 0, nproc = 0;     // The ulimits given to containers (soft = hard).
  std::vector<std::string> cap_add;  // Checked capability names, lower case without CAP_: "sys_nice".

  // "podman 4.3.1, runc": the inventory's `containers`.
  std::string describe() const { return "podman " + version + ", " + oci_runtime; }
  // podman and its global options (ContainerPlan::podman).
  std::vector<std::string> podman_argv() const;
};

// "podman version 4.3.1" -> "4.3.1"; nullopt for anything else.
std::optional<std::string> parse_podman_version(const std::string& out);
// "crun" on a pure cgroup v2 host (<cgroup_root>/cgroup.controllers exists), else "runc".
std::string default_oci_runtime(const std::string& cgroup_root);

// "SYS_NICE", "cap_sys_nice", "sys_nice" -> "sys_nice": a Linux capability's name;
// nullopt for anything else.
std::optional<std::string> capability_name(const std::string& name);

// Finds podman and the runtime. Mode none: nullopt (the node runs no images). An error
// says why images cannot run (no podman, no runtime): the agent then runs none and
// logs why; it does not refuse to start.
Result<std::optional<ContainerRuntime>> detect_container_runtime(const ContainerConfig& cfg, CommandRunner& runner);

// The job's mounts with their sources resolved (realpath) and each checked to be an
// allowed directory or under one: "mount /etc: /etc is not under a directory this node
// allows (--allow-mount: /data)", "mount /data/x: No such file or directory".
Result<std::vector<api::Mount>> resolve_mounts(const std::vector<api::Mount>& mounts,
                                               const std::vector<std::string>& allowed);

// A host device node given to a container: `host` (under the dev root) at `inside`.
struct ContainerDevice {
  std::string host;
  std::string inside;
  bool operator==(const ContainerDevice&) const = default;
};
// The task's cards' nodes (card index in `indices`) and the vendor's shared control
// nodes present under `dev_root`, each at /dev/<its path under the dev root>.
std::vector<ContainerDevice> container_devices(api::Vendor vendor, const std::string& dev_root,
                                               const std::string& sysfs_root, const std::vector<api::Device>& devices,
                                               const std::vector<int>& indices);

// Everything one rank's `podman run` is made of.
struct PodmanRun {
  std::vector<std::string> podman;  // ContainerRuntime::podman_argv().
  std::string name;                 // Container name.
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> env_names;  // Passed by name: podman's own env holds them.
  std::optional<int> uid, gid;
  std::vector<int> groups;         // Supplementary groups (--group-add).
  std::string workdir;             // Bind-mounted at the same path; the working directory.
  std::vector<api::Mount> mounts;  // Resolved.
  std::vector<ContainerDevice> devices;
  int64_t shm_size_mib = 0;  // 0: --ipc host.
  std::vector<int> cpus;     // --cpuset-cpus; empty: none.
  int64_t memory_mib = 0;    // --memory and --memory-swap; 0: none (or cgroup_parent set).
  int64_t pids_max = 0;      // --pids-limit; 0: none.
  int64_t nofile = 0, nproc = 0;
  std::string init_path;             // --init --init-path; "": no init.
  std::vector<std::string> cap_add;  // --cap-add each: the node's, never a job's.
  // Set: the container's cgroup goes below the task's (--cgroups no-conmon
  // --cgroup-parent: kContainerCgroupParent on v1, the task's dir on v2), and the task's
  // memory limit holds it, not one of its own. "": podman's own cgroup.
  std::string cgroup_parent;
};
std::vector<std::string> podman_run_argv(const PodmanRun& r);
// The --cgroup-parent that puts a task's containers below its cgroup `cg`: v1
// kContainerCgroupParent (relative: runc resolves it against its own, the task's,
// cgroups); v2 the task's dir as a path of the cgroup2 mount at `cgroup_root`; "" when
// the dir is not under it.
std::string container_cgroup_parent(const TaskCgroup& cg, const std::string& cgroup_root);

// Turns `plan` (made for bare processes) into one whose ranks run in the assignment's
// image: each rank's argv becomes its `podman run`, the plan's user moves into podman's
// --user (podman itself runs as root), its cgroup's limits become podman's. `groups`:
// the job user's supplementary groups. An error (a mount not allowed, a workdir podman
// cannot mount) fails the launch with that reason.
Status containerize(LaunchPlan& plan, const api::Assignment& a, const api::NodeInventory& inv,
                    const ContainerRuntime& rt, const std::string& dev_root, const std::string& sysfs_root,
                    const std::vector<int>& groups);
// The supplementary groups of `user` with primary group `gid` (getgrouplist).
std::vector<int> user_groups(const std::string& user, int gid);

// Variables of a rank's environment that stay out of its container (the node's own).
bool stays_on_node(const std::string& name);
// "tessel-<assignment id>-r<rank>-<suffix>" (suffix: random per task, so that a job id
// another scheduler reuses on this host never meets a container of the same name).
std::string container_name(const std::string& assignment_id, int rank, const std::string& suffix);

}  // namespace tessel::agent
