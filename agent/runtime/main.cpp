// tessel-agent: the node agent (see tessel/agent/agent.hpp), plus one subcommand:
//   tessel-agent inventory ...          print the node inventory (agent/inventory)
// Each task's supervisor is the tessel-supervisor program installed next to it.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <spdlog/spdlog.h>

#include <thread>

#include "tessel/log/logging.hpp"
#include "tessel/agent/agent.hpp"
#include "tessel/agent/cdi_spec_writer.hpp"
#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/host_shape.hpp"
#include "tessel/agent/container.hpp"
#include "tessel/agent/isolation.hpp"
#include "tessel/agent/inventory_cli.hpp"
#include "tessel/agent/log_server.hpp"
#include "tessel/agent/run_as.hpp"
#include "tessel/agent/supervisor.hpp"
#include "tessel/agent/vendor_detect.hpp"
#include "tessel/api/labels.hpp"
#include "tessel/api/reserved_labels.hpp"
#include "tessel/base/host_port.hpp"
#include "tessel/http/fd_limit.hpp"

using namespace tessel;
using namespace tessel::agent;

namespace {

struct Options {
  std::string scheduler, node, address, listen = "0.0.0.0:7451", token_file;
  std::string state_dir = "/var/lib/tessel-agent", vendor = "auto", hl_smi = "hl-smi", nvidia_smi = "nvidia-smi";
  std::string amd_smi = "amd-smi", rocm_smi = "rocm-smi", npu_smi = "npu-smi", xpu_smi = "xpu-smi",
              neuron_ls = "neuron-ls";
  std::string mthreads_gmi = "mthreads-gmi", cnmon = "cnmon";
  std::string sysfs_root = "/sys", run_as, log_level = "info";
  std::string isolation = "auto", cgroup_root = "/sys/fs/cgroup", cgroup_subtree = "tessel", dev_root = "/dev";
  std::string cdi_spec_dir;  // Empty: no CDI spec written.
  int64_t task_pids_max = 32768;
  std::string container_runtime = "auto", podman = "podman", registry_auth;
  std::vector<std::string> allow_mounts, container_caps;
  int64_t image_pull_timeout_s = 600;
  int64_t log_cap_mib = 1024;
  double heartbeat_interval = 0;
  size_t log_max_connections = 4096;
  bool log_max_connections_given = false;
  std::vector<std::string> labels;  // --label KEY=VALUE, as given.
  api::Labels node_labels;          // The same, checked (node_labels()).
};

int fail(const std::string& msg, int code = 1) {
  std::cerr << "tessel-agent: " << msg << "\n";
  return code;
}

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("tessel-agent");
}

std::optional<std::string> get_env(const std::string& k) {
  const char* v = std::getenv(k.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// Blocks SIGTERM and SIGINT in every thread (one thread takes them with sigwait; call
// before other threads start) and ignores SIGPIPE. Returns the blocked set.
sigset_t block_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return sigs;
}

// The vendor tools and sysfs root the inventory reads, from the flags.
InventoryConfig inventory_config(const Options& o) {
  InventoryConfig icfg;
  icfg.hl_smi = o.hl_smi;
  icfg.nvidia_smi = o.nvidia_smi;
  icfg.amd_smi = o.amd_smi;
  icfg.rocm_smi = o.rocm_smi;
  icfg.npu_smi = o.npu_smi;
  icfg.xpu_smi = o.xpu_smi;
  icfg.neuron_ls = o.neuron_ls;
  icfg.mthreads_gmi = o.mthreads_gmi;
  icfg.cnmon = o.cnmon;
  icfg.sysfs_root = o.sysfs_root;
  icfg.path_env = process_path_env();
  return icfg;
}

// The task isolation --isolation asks for, fitted to this host's CPUs and memory.
Result<std::unique_ptr<Isolation>> open_isolation(const Options& o) {
  IsolationConfig iso_cfg;
  iso_cfg.mode = o.isolation;
  iso_cfg.cgroup_root = o.cgroup_root;
  iso_cfg.subtree = o.cgroup_subtree;
  iso_cfg.dev_root = o.dev_root;
  iso_cfg.sysfs_root = o.sysfs_root;
  iso_cfg.pids_max = o.task_pids_max;
  auto proc_text = [](const char* path) {
    auto text = read_small_file(path);
    return text ? *text : std::string();
  };
  iso_cfg.self_cgroup = proc_text("/proc/self/cgroup");
  iso_cfg.self_pid = static_cast<int>(::getpid());
  const std::string meminfo = proc_text("/proc/meminfo");
  return Isolation::open(iso_cfg, host_shape(o.sysfs_root, allowed_cpus(), meminfo));
}

// What runs jobs' images (--container-runtime): nullopt when the node runs none. Auto
// mode without podman or its runtime runs none and says why; an explicit runtime that
// cannot be had, or a bad --allow-mount, --registry-auth or --container-cap-add, is an
// error.
Result<std::optional<ContainerRuntime>> open_containers(const Options& o, CommandRunner& runner) {
  ContainerConfig c;
  c.mode = o.container_runtime;
  c.podman = o.podman;
  c.cgroup_root = o.cgroup_root;
  c.allow_mounts = o.allow_mounts;
  c.registry_auth = o.registry_auth;
  c.cap_add = o.container_caps;
  c.pull_timeout_s = o.image_pull_timeout_s;
  c.path_env = process_path_env();
  auto rt = detect_container_runtime(c, runner);
  if (rt || o.container_runtime != "auto" || rt.error().code == ErrorCode::invalid_argument) return rt;
  spdlog::warn("images: none run on this node: {} (--container-runtime none says so quietly)", rt.error().message);
  return std::optional<ContainerRuntime>{};
}

// The bearer token from --token-file (empty without one) and the node name (--node,
// else the host name).
struct Identity {
  std::string token, node;
};
Result<Identity> identity(const Options& o) {
  Identity id;
  if (!o.token_file.empty()) {
    auto t = read_token_file(o.token_file);
    if (!t) return t.error();
    id.token = *t;
  }
  id.node = o.node;
  if (id.node.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    id.node = host;
  }
  return id;
}

// How the agent's tasks start: the launcher binary, their base environment, user,
// isolation and log cap.
TaskManagerConfig task_config(const Options& o, const std::string& node, const std::optional<RunAs>& run_as,
                              Isolation* isolation, const std::optional<ContainerRuntime>& containers) {
  TaskManagerConfig tcfg;
  tcfg.containers = containers ? &*containers : nullptr;
  tcfg.dev_root = o.dev_root;
  tcfg.sysfs_root = o.sysfs_root;
  tcfg.node = node;
  tcfg.base_env = minimal_base_env(get_env, run_as ? std::optional(run_as->user) : std::nullopt,
                                   run_as ? std::optional(run_as->home) : std::nullopt);
  tcfg.run_as = run_as;
  tcfg.isolation = isolation;
  tcfg.log_cap_bytes = o.log_cap_mib << 20;
  return tcfg;
}

// The tessel-supervisor program installed next to this binary (the one way a task's
// supervisor starts), or an error naming where it was looked for.
Result<std::string> supervisor_exe() {
  const std::string exe = self_exe();
  std::string sup = exe.substr(0, exe.rfind('/') + 1) + "tessel-supervisor";
  if (::access(sup.c_str(), X_OK) != 0)
    return Error{sup + ": " + std::strerror(errno) + " (installed with tessel-agent)"};
  return sup;
}

// What the agent tells the scheduler and how often; `logs` learns the scheduler's key.
AgentConfig agent_config(const Options& o, const std::string& node, int port, const StateDir& dir, LogServer& logs,
                         EpochGuard* epochs) {
  AgentConfig acfg;
  acfg.node = node;
  acfg.address = o.address.empty() ? node : o.address;
  acfg.scheduler_url = o.scheduler;
  acfg.agent_port = port;
  if (o.heartbeat_interval > 0)
    acfg.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(o.heartbeat_interval * 1000));
  acfg.seed = std::random_device{}();
  acfg.events_socket = events_socket_path(dir.root());
  acfg.on_scheduler_key = [&logs](const std::string& key) { logs.set_scheduler_key(key); };
  acfg.epochs = epochs;
  acfg.labels = o.node_labels;
  return acfg;
}

int agent_main(const Options& o) {
  const sigset_t sigs = block_signals();
  if (auto urls = http::parse_http_urls(o.scheduler); !urls) return fail("--scheduler: " + urls.error().message, 2);
  if (!o.cdi_spec_dir.empty())
    if (auto st = check_cdi_spec_dir(o.cdi_spec_dir); !st) return fail(st.error().message, 2);
  auto id = identity(o);
  if (!id) return fail(id.error().message);
  const std::string& node = id->node;
  auto resolved = resolve_run_as(o.run_as, ::geteuid(), lookup_system_user);
  if (!resolved) return fail(resolved.error().message, 2);
  const std::optional<RunAs> run_as = *resolved;
  if (run_as && run_as->uid == 0) spdlog::warn("jobs run as root (--run-as root)");
  StateDir dir(o.state_dir);
  if (auto st = dir.init(); !st) return fail("state dir: " + st.error().message);

  auto epochs = EpochGuard::open(epoch_file_path(dir.root()));
  if (!epochs) return fail("state dir: " + epochs.error().message);

  ProcessRunner runner;
  auto source = make_inventory_source(o.vendor, runner, inventory_config(o));
  if (!source) return fail("inventory: " + source.error().message);
  auto isolation = open_isolation(o);
  if (!isolation) return fail("task isolation: " + isolation.error().message + " (--isolation none starts without it)");
  spdlog::info("task isolation: {}", (*isolation)->kind());
  HostShapeSource shaped(**source, (*isolation)->host(), (*isolation)->kind(), o.sysfs_root);
  auto containers = open_containers(o, runner);
  if (!containers) return fail("images: " + containers.error().message + " (--container-runtime none runs no images)");
  if (*containers) {
    spdlog::info("images: {}", (*containers)->describe());
    shaped.set_containers((*containers)->describe());
  }

  auto supervisor = supervisor_exe();
  if (!supervisor) return fail("supervisor: " + supervisor.error().message);
  DetachedLauncher launcher(*supervisor);
  TaskManager tasks(dir, launcher, task_config(o, node, run_as, isolation->get(), *containers));
  tasks.load();
  tasks.sweep_cgroups();  // Running tasks keep theirs: their supervisors own them.
  dir.remove_acknowledged_older_than(system_clock().now_ms(), 24LL * 3600 * 1000);

  LogServer logs(dir, tasks);
  // A log reader holds two descriptors: its connection and the log file.
  const size_t log_cap = http::connection_cap(http::raise_fd_limit(), o.log_max_connections, 2,
                                              o.log_max_connections_given, "--log-max-connections");
  auto port = logs.start(o.listen, log_cap);
  if (!port) return fail(port.error().message);
  auto hp = parse_host_port(o.listen);
  std::cout << "listening on " << hp->host << ":" << *port << std::endl;

  const AgentConfig acfg = agent_config(o, node, *port, dir, logs, epochs->get());
  // Heartbeats keep their connection (one every few seconds, well inside the
  // scheduler's idle timeout: no TCP or TLS handshake each time); reports open one
  // each time (one per task change); the long poll keeps its own.
  // All three share one I/O thread (tessel::http::ClientLoop).
  http::ClientLoop scheduler_connections;
  SchedulerClient hb_api(scheduler_connections, o.scheduler, id->token),
      poll_api(scheduler_connections, o.scheduler, id->token),
      report_api(scheduler_connections, o.scheduler, id->token, /*keep_alive=*/false);
  SystemdNotifier notifier;
  CdiSpecSource with_cdi(shaped, o.cdi_spec_dir, o.dev_root, o.sysfs_root);
  InventorySource& inventory = o.cdi_spec_dir.empty() ? static_cast<InventorySource&>(shaped) : with_cdi;
  Agent agent(acfg, hb_api, poll_api, report_api, inventory, tasks, notifier);

  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("signal {}: stopping (tasks keep running)", sig);
    agent.stop();
  });
  signals.detach();
  spdlog::info("tessel-agent {} starting: scheduler {}, state dir {}", node, o.scheduler, o.state_dir);
  agent.run();
  logs.stop();
  return 0;
}

// Reads the agent's flags into `o`. Returns the exit code when the process ends here
// (--help, a bad flag), else nullopt.
std::optional<int> parse_options(int argc, char** argv, Options& o) {
  CLI::App app{"tessel-agent: the Tessel node agent"};
  app.add_option("--scheduler", o.scheduler,
                 "Scheduler URL, e.g. http://sched:7450, or its replicas' URLs separated by commas")
      ->required();
  app.add_option("--node", o.node, "Node name (default: host name)");
  app.add_option("--address", o.address, "Address others reach this node by (default: node name)");
  app.add_option("--listen", o.listen, "HOST:PORT of the agent's HTTP server (logs)")->capture_default_str();
  auto* log_conns =
      app.add_option("--log-max-connections", o.log_max_connections,
                     "log readers at once; past it a 503 (default 4096, or what the open file limit fits)")
          ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--token-file", o.token_file, "File whose first non-empty line is the bearer token");
  app.add_option("--state-dir", o.state_dir, "Durable task state")->capture_default_str();
  app.add_option("--vendor", o.vendor, "habana|nvidia|amd|intel|ascend|neuron|tpu|cambricon|mthreads|auto")
      ->capture_default_str()
      ->check(CLI::IsMember(vendor_choices()));
  app.add_option("--hl-smi", o.hl_smi, "hl-smi path or name")->capture_default_str();
  app.add_option("--nvidia-smi", o.nvidia_smi, "nvidia-smi path or name")->capture_default_str();
  app.add_option("--amd-smi", o.amd_smi, "amd-smi path or name")->capture_default_str();
  app.add_option("--rocm-smi", o.rocm_smi, "rocm-smi path or name (run when amd-smi is not found)")
      ->capture_default_str();
  app.add_option("--npu-smi", o.npu_smi, "npu-smi path or name")->capture_default_str();
  app.add_option("--xpu-smi", o.xpu_smi, "xpu-smi path or name")->capture_default_str();
  app.add_option("--neuron-ls", o.neuron_ls, "neuron-ls path or name")->capture_default_str();
  app.add_option("--mthreads-gmi", o.mthreads_gmi, "mthreads-gmi path or name")->capture_default_str();
  app.add_option("--cnmon", o.cnmon, "cnmon path or name")->capture_default_str();
  app.add_option("--sysfs-root", o.sysfs_root, "Root of sysfs (device health, NUMA layout)")->capture_default_str();
  app.add_option("--isolation", o.isolation,
                 "Fence each task in a cgroup of its own: auto (detect), cgroup1, cgroup2, or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cgroup1", "cgroup2", "none"}));
  app.add_option("--cgroup-root", o.cgroup_root, "Where the cgroup hierarchy is mounted")->capture_default_str();
  app.add_option("--cgroup-subtree", o.cgroup_subtree, "The agent's directory for task cgroups, below its own cgroup")
      ->capture_default_str();
  app.add_option("--dev-root", o.dev_root, "Where the cards' device nodes are (their cgroup device rules)")
      ->capture_default_str();
  app.add_option("--cdi-spec-dir", o.cdi_spec_dir,
                 "Write the cards' CDI spec (tessel-<class>.json, kind tessel.dev/<class>) in this directory, e.g. "
                 "/etc/cdi, for operators' own podman run --device tessel.dev/gaudi=N (default: none written)");
  app.add_option("--container-runtime", o.container_runtime,
                 "Run jobs' images with podman and this OCI runtime: auto (crun on cgroup v2, runc on v1 or hybrid; "
                 "none when podman is missing), runc, crun, or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "runc", "crun", "none"}));
  app.add_option("--podman", o.podman, "podman path or name")->capture_default_str();
  app.add_option("--allow-mount", o.allow_mounts,
                 "A directory jobs' mounts may come from (repeatable; symlinks and .. resolved first)");
  app.add_option("--registry-auth", o.registry_auth, "Registry credentials for image pulls (podman's auth.json)");
  app.add_option("--container-cap-add", o.container_caps,
                 "A capability every job's container gets beyond podman's defaults, e.g. sys_nice as Intel's Gaudi "
                 "containers are run (repeatable; default: none)");
  app.add_option("--image-pull-timeout", o.image_pull_timeout_s, "Seconds an image pull may take")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_option("--task-pids-max", o.task_pids_max, "Most processes and threads of one task (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{4194304}));
  app.add_option("--log-cap-mib", o.log_cap_mib,
                 "MiB of output kept per rank; past it the rest is dropped with a marker line (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--run-as", o.run_as,
                 "Run tasks as this user; required when the agent runs as root (--run-as root: on purpose)");
  app.add_option("--heartbeat-interval", o.heartbeat_interval, "Seconds between heartbeats (default: scheduler's)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--label", o.labels,
                 "KEY=VALUE: a label of this node (repeatable, or comma-separated; default: $TESSEL_AGENT_LABELS)")
      ->envname("TESSEL_AGENT_LABELS")
      ->delimiter(',');
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.log_max_connections_given = log_conns->count() > 0;
  return std::nullopt;
}

// The --label flags, checked: each KEY=VALUE (tessel/api/labels.hpp), each key once.
Result<api::Labels> node_labels(const std::vector<std::string>& given) {
  api::Labels out;
  for (const std::string& text : given) {
    auto label = api::parse_label(text, "--label");
    if (!label) return label.error();
    if (api::is_reserved_label(label->first))
      return Error::invalid("--label: " + label->first + ": the tessel.io/ prefix is the scheduler's own", "--label");
    if (!out.emplace(label->first, label->second).second)
      return Error::invalid("--label: " + label->first + " given twice", "--label");
  }
  if (out.size() > api::kMaxLabels)
    return Error::invalid("--label: more than " + std::to_string(api::kMaxLabels) + " labels", "--label");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "inventory") return inventory_main(argc - 1, argv + 1);
  Options o;
  if (auto code = parse_options(argc, argv, o)) return *code;
  auto labels = node_labels(o.labels);
  if (!labels) return fail(labels.error().message, 2);
  o.node_labels = std::move(*labels);
  if (auto s = tessel::init_logging("tessel-agent", o.log_level); !s) {
    std::cerr << "tessel-agent: " << s.error().message << "\n";
    return 2;
  }
  return agent_main(o);
}
