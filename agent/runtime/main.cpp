// tessel-agent: the node agent (see tessel/agent/agent.hpp), plus two subcommands:
//   tessel-agent inventory ...          print the node inventory (agent/inventory)
//   tessel-agent supervise --task-dir D the per-task supervisor (started by the agent)
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <random>
#include <spdlog/spdlog.h>

#include <thread>

#include "tessel/log/logging.hpp"
#include "tessel/agent/agent.hpp"
#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/host_shape.hpp"
#include "tessel/agent/isolation.hpp"
#include "tessel/agent/inventory_cli.hpp"
#include "tessel/agent/log_server.hpp"
#include "tessel/agent/run_as.hpp"
#include "tessel/agent/supervisor.hpp"
#include "tessel/agent/vendor_detect.hpp"
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
  int64_t task_pids_max = 32768;
  int64_t log_cap_mib = 1024;
  double heartbeat_interval = 0;
  size_t log_max_connections = 4096;
  bool log_max_connections_given = false;
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

int supervise_main(int argc, char** argv) {
  CLI::App app{"tessel-agent supervise: run one task (started by the agent)"};
  std::string dir;
  app.add_option("--task-dir", dir, "Task directory holding launch.json")->required();
  CLI11_PARSE(app, argc, argv);
  if (auto s = tessel::init_logging("tessel-supervisor", "info"); !s) return 2;
  return run_supervisor(dir);
}

int agent_main(const Options& o) {
  // Signals are handled by one thread with sigwait; block them before other threads start.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (auto urls = http::parse_http_urls(o.scheduler); !urls) return fail("--scheduler: " + urls.error().message, 2);

  std::string token;
  if (!o.token_file.empty()) {
    auto t = read_token_file(o.token_file);
    if (!t) return fail(t.error().message);
    token = *t;
  }
  std::string node = o.node;
  if (node.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    node = host;
  }
  auto resolved = resolve_run_as(o.run_as, ::geteuid(), lookup_system_user);
  if (!resolved) return fail(resolved.error().message, 2);
  const std::optional<RunAs> run_as = *resolved;
  if (run_as && run_as->uid == 0) spdlog::warn("jobs run as root (--run-as root)");
  StateDir dir(o.state_dir);
  if (auto st = dir.init(); !st) return fail("state dir: " + st.error().message);

  auto epochs = EpochGuard::open(epoch_file_path(dir.root()));
  if (!epochs) return fail("state dir: " + epochs.error().message);

  ProcessRunner runner;
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
  auto source = make_inventory_source(o.vendor, runner, icfg);
  if (!source) return fail("inventory: " + source.error().message);

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
  auto isolation = Isolation::open(iso_cfg, host_shape(o.sysfs_root, allowed_cpus(), meminfo));
  if (!isolation) return fail("task isolation: " + isolation.error().message + " (--isolation none starts without it)");
  spdlog::info("task isolation: {}", (*isolation)->kind());
  HostShapeSource shaped(**source, (*isolation)->host(), (*isolation)->kind(), o.sysfs_root);

  // The small tessel-supervisor next to this binary starts faster; else our own `supervise`.
  std::string exe = self_exe();
  std::string sup = exe.substr(0, exe.rfind('/') + 1) + "tessel-supervisor";
  DetachedLauncher launcher(::access(sup.c_str(), X_OK) == 0 ? sup : exe);
  TaskManagerConfig tcfg;
  tcfg.node = node;
  tcfg.base_env = minimal_base_env(get_env, run_as ? std::optional(run_as->user) : std::nullopt,
                                   run_as ? std::optional(run_as->home) : std::nullopt);
  tcfg.run_as = run_as;
  tcfg.isolation = isolation->get();
  tcfg.log_cap_bytes = o.log_cap_mib << 20;
  TaskManager tasks(dir, launcher, tcfg);
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

  AgentConfig acfg;
  acfg.node = node;
  acfg.address = o.address.empty() ? node : o.address;
  acfg.scheduler_url = o.scheduler;
  acfg.agent_port = *port;
  if (o.heartbeat_interval > 0)
    acfg.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(o.heartbeat_interval * 1000));
  acfg.seed = std::random_device{}();
  acfg.events_socket = events_socket_path(dir.root());
  acfg.on_scheduler_key = [&logs](const std::string& key) { logs.set_scheduler_key(key); };
  acfg.epochs = epochs->get();
  // Heartbeats keep their connection (one every few seconds, well inside the
  // scheduler's idle timeout: no TCP or TLS handshake each time); reports open one
  // each time (one per task change); the long poll keeps its own.
  // All three share one I/O thread (tessel::http::ClientLoop).
  http::ClientLoop scheduler_connections;
  SchedulerClient hb_api(scheduler_connections, o.scheduler, token),
      poll_api(scheduler_connections, o.scheduler, token),
      report_api(scheduler_connections, o.scheduler, token, /*keep_alive=*/false);
  SystemdNotifier notifier;
  Agent agent(acfg, hb_api, poll_api, report_api, shaped, tasks, notifier);

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

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "inventory") return inventory_main(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "supervise") return supervise_main(argc - 1, argv + 1);

  CLI::App app{"tessel-agent: the Tessel node agent"};
  Options o;
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
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.log_max_connections_given = log_conns->count() > 0;
  if (auto s = tessel::init_logging("tessel-agent", o.log_level); !s) {
    std::cerr << "tessel-agent: " << s.error().message << "\n";
    return 2;
  }
  return agent_main(o);
}
