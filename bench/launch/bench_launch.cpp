// bench_launch [--jobs N] [--heartbeat-interval S] [--isolation none|auto|cgroup1|cgroup2]:
// submission-to-worker-start latency (isolation: the agent's, default none; a cgroup per
// task costs its creation and removal, under the cgroup subtree tessel-bench).
// Starts the real tessel-scheduler and one tessel-agent (fake hl-smi, 8 Gaudi 2 cards)
// on loopback in a temp dir, then submits N one-card jobs one after another. The
// worker is this program in `--worker` mode: it prints CLOCK_REALTIME in ns to its
// log. Latency = worker time - time just before POST /v1/jobs. Each job is awaited
// (succeeded) before the next, so no job queues behind busy cards.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "benchkit.hpp"

using nlohmann::json;
using namespace std::chrono;

static int64_t now_ns() { return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count(); }

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--worker") {
    std::printf("%lld\n", static_cast<long long>(now_ns()));
    return 0;
  }
  int jobs = 1000;
  std::string hb = "0.05";
  std::string isolation = "none";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--jobs")
      jobs = std::stoi(argv[i + 1]);
    else if (a == "--heartbeat-interval")
      hb = argv[i + 1];
    else if (a == "--isolation")
      isolation = argv[i + 1];
    else {
      std::fprintf(stderr, "bench_launch: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const tessel::benchkit::TempDir dir("tessel-bench-launch");
  const std::string root = dir.path().string();
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
    std::string text;
    while (steady_clock::now() < deadline) {
      text = tessel::benchkit::read_file(log);
      if (!text.empty() && text.back() == '\n') break;
      std::this_thread::sleep_for(microseconds(200));
    }
    if (text.empty()) {
      ++failures;
      continue;
    }
    lat_ms.push_back((std::stoll(text) - t0) / 1e6);
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
