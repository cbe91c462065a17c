// bench_launch [--jobs N] [--heartbeat-interval S] [--isolation none|auto|cgroup1|cgroup2]
//              [--image REF]:
// submission-to-worker-start latency (isolation: the agent's, default none; a cgroup per
// task costs its creation and removal, under the cgroup subtree tessel-bench). With
// --image (root, podman), each job runs in that image, cached on the node: REF must
// exist in podman's store, or be localhost/tessel-bench-busybox, which is built from
// busybox-static (podman import) when missing; the worker is the image's
// `/bin/busybox adjtimex`, which prints the kernel's time in microseconds.
// Starts the real tessel-scheduler and one tessel-agent (fake hl-smi, 8 Gaudi 2 cards)
// on loopback in a temp dir, then submits N one-card jobs one after another. The
// worker is this program in `--worker` mode: it prints CLOCK_REALTIME in ns to its
// log. Latency = worker time - time just before POST /v1/jobs. Each job is awaited
// (succeeded) before the next, so no job queues behind busy cards.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "benchkit.hpp"

using nlohmann::json;
using namespace std::chrono;

static int64_t now_ns() { return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count(); }

extern char** environ;

// Runs argv (no shell) with its output discarded; its exit status, or -1.
static int run_quiet(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The image the jobs run in, built from busybox-static when it is the bench's own and
// missing; false when it is not there.
static bool ensure_image(const std::string& ref, const std::string& dir) {
  if (run_quiet({"podman", "image", "exists", ref}) == 0) return true;
  if (ref != "localhost/tessel-bench-busybox" && ref != "localhost/tessel-bench-busybox:latest") return false;
  namespace fs = std::filesystem;
  const std::string rootfs = dir + "/rootfs";
  fs::create_directories(rootfs + "/bin");
  fs::copy_file("/bin/busybox", rootfs + "/bin/busybox", fs::copy_options::overwrite_existing);
  fs::create_symlink("busybox", rootfs + "/bin/sh");
  return run_quiet({"tar", "-C", rootfs, "-cf", dir + "/rootfs.tar", "."}) == 0 &&
         run_quiet({"podman", "import", "--quiet", dir + "/rootfs.tar", ref}) == 0;
}

// The worker's start in ns since the epoch from its log: this program's --worker line,
// or busybox adjtimex's "time.tv_sec:" and "time.tv_usec:" lines; -1 until complete.
static int64_t worker_start_ns(const std::string& text, bool image) {
  if (!image) return !text.empty() && text.back() == '\n' ? std::stoll(text) : -1;
  const size_t sec = text.find("time.tv_sec:"), usec = text.find("time.tv_usec:");
  if (sec == std::string::npos || usec == std::string::npos || text.find('\n', usec) == std::string::npos) return -1;
  return std::stoll(text.substr(sec + 12)) * 1'000'000'000 + std::stoll(text.substr(usec + 13)) * 1000;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--worker") {
    std::printf("%lld\n", static_cast<long long>(now_ns()));
    return 0;
  }
  int jobs = 1000;
  std::string hb = "0.05";
  std::string isolation = "none";
  std::string image;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--jobs")
      jobs = std::stoi(argv[i + 1]);
    else if (a == "--heartbeat-interval")
      hb = argv[i + 1];
    else if (a == "--isolation")
      isolation = argv[i + 1];
    else if (a == "--image")
      image = argv[i + 1];
    else {
      std::fprintf(stderr, "bench_launch: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const tessel::benchkit::TempDir dir("tessel-bench-launch");
  const std::string root = dir.path().string();
  if (!image.empty() && !ensure_image(image, root)) {
    std::fprintf(stderr, "bench_launch: image %s is not in podman's store (nor buildable here)\n", image.c_str());
    return 1;
  }
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) return 1;

  tessel::benchkit::ServerProcess sched(
      tessel::benchkit::scheduler_argv(TESSEL_SCHEDULER_BIN, root + "/s.db", {"--log-level", "warn"}),
      root + "/sched.out", root + "/sched.out.err");
  const int port = sched.port();
  if (port <= 0) {
    std::fprintf(stderr, "bench_launch: scheduler did not start\n");
    return 1;
  }
  std::vector<std::string> agent_argv = {TESSEL_AGENT_BIN,
                                         "--scheduler",
                                         "http://127.0.0.1:" + std::to_string(port),
                                         "--node",
                                         "n1",
                                         "--address",
                                         "127.0.0.1",
                                         "--listen",
                                         "127.0.0.1:0",
                                         "--state-dir",
                                         root + "/agent",
                                         "--vendor",
                                         "habana",
                                         "--hl-smi",
                                         FAKE_HL_SMI_BIN,
                                         "--heartbeat-interval",
                                         hb,
                                         "--log-level",
                                         "warn",
                                         "--isolation",
                                         isolation,
                                         "--cgroup-subtree",
                                         "tessel-bench"};
  if (::geteuid() == 0) agent_argv.insert(agent_argv.end(), {"--run-as", "root"});  // Root needs a jobs' user.
  tessel::benchkit::ServerProcess agent(
      agent_argv, root + "/agent.out", root + "/agent.out.err",
      {{"FAKE_HL_SMI_FIXTURE", std::string(TESSEL_FIXTURES_DIR) + "/hl-smi/gaudi2-hl225-8.csv"}});
  if (agent.port() <= 0) {
    std::fprintf(stderr, "bench_launch: agent did not start\n");
    return 1;
  }

  httplib::Client c("127.0.0.1", port);
  c.set_keep_alive(true);
  // httplib writes headers and body separately: without TCP_NODELAY every keep-alive
  // POST waits ~40 ms for a delayed ACK, which this benchmark measured as launch latency.
  c.set_tcp_nodelay(true);
  auto ready = steady_clock::now() + seconds(30);
  while (steady_clock::now() < ready) {
    auto r = c.Get("/v1/nodes/n1");
    if (r && r->status == 200 && json::parse(r->body, nullptr, false).value("state", "") == "ready") break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  json spec = {{"command", {std::string(self), "--worker"}}, {"devices", 1}};
  if (!image.empty()) spec = {{"command", {"/bin/busybox", "adjtimex"}}, {"devices", 1}, {"image", image}};
  std::vector<double> lat_ms;
  int failures = 0;
  for (int i = 0; i < jobs; ++i) {
    int64_t t0 = now_ns();
    auto r = c.Post("/v1/jobs", spec.dump(), "application/json");
    if (!r || r->status / 100 != 2) {
      ++failures;
      continue;
    }
    std::string id = json::parse(r->body)["id"];
    std::string log = root + "/agent/tasks/" + id + ".0.0/rank0.log";
    auto deadline = steady_clock::now() + seconds(30);
    int64_t started = -1;
    while (steady_clock::now() < deadline) {
      started = worker_start_ns(tessel::benchkit::read_file(log), !image.empty());
      if (started >= 0) break;
      std::this_thread::sleep_for(microseconds(200));
    }
    if (started < 0) {
      ++failures;
      continue;
    }
    lat_ms.push_back((started - t0) / 1e6);
    while (steady_clock::now() < deadline) {  // Cards free again before the next job.
      auto g = c.Get(("/v1/jobs/" + id).c_str());
      if (g && json::parse(g->body, nullptr, false).value("state", "") == "succeeded") break;
      std::this_thread::sleep_for(milliseconds(2));
    }
  }
  std::sort(lat_ms.begin(), lat_ms.end());
  auto pct = [&](double p) {
    return lat_ms.empty() ? 0.0 : lat_ms[std::min(lat_ms.size() - 1, size_t(p * lat_ms.size()))];
  };
  std::printf("jobs %zu (failures %d)  submit->worker start ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              lat_ms.size(), failures, pct(0.50), pct(0.90), pct(0.99), lat_ms.empty() ? 0.0 : lat_ms.back());
  return failures == 0 ? 0 : 1;
}
