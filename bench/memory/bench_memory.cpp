// bench_memory: how much memory does the scheduler take to answer many clients that
// list many big jobs at once? Not run in CI; see bench/RESULTS.md.
//
// It starts the tessel-scheduler built here (default flags, a fresh --db, no agents:
// every job stays pending), submits --jobs jobs whose specs are as big as the API
// allows (256 KiB of arguments and about 250 KiB of env: about half a MiB each), from
// 4 threads, and reads the scheduler's RSS. Then --clients threads each page through
// the whole listing (GET /v1/jobs?limit=1000, following `next`) --rounds times, all
// at once, while a monitor samples the RSS every 20 ms. It prints the RSS after the
// submissions (what holding the jobs costs), the highest RSS sampled while listing,
// the peak (VmHWM), pages per listing and the p50/max time of one whole listing.
//
//   bench_memory [--jobs 1000] [--clients 16] [--rounds 3] [--scheduler PATH]
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "benchkit.hpp"

namespace {

namespace benchkit = tessel::benchkit;
using benchkit::Clock;
using nlohmann::json;

struct Options {
  int jobs = 1000;
  int clients = 16;
  int rounds = 3;
  std::string scheduler = TESSEL_SCHEDULER_BIN;
};

int usage(const char* why) {
  std::fprintf(stderr,
               "bench_memory: %s\nusage: bench_memory [--jobs N] [--clients N] [--rounds N] [--scheduler PATH]\n", why);
  return 2;
}

// The biggest spec the API takes, give or take: 4 arguments of 65,000 bytes
// (262,004 of 262,144) and 4 variables of 63,000 (252,024).
std::string big_spec_body() {
  json command = {"true"};
  for (int i = 0; i < 4; ++i) command.push_back(std::string(65'000, static_cast<char>('a' + i)));
  json env = json::object();
  for (int i = 0; i < 4; ++i) env["BIG_" + std::to_string(i)] = std::string(63'000, static_cast<char>('k' + i));
  return json{{"command", command}, {"env", env}, {"devices", 1}}.dump();
}

bool submit_all(int port, int jobs) {
  const std::string body = big_spec_body();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(60, 0);
      while (next.fetch_add(1) < jobs) {
        auto r = c.Post("/v1/jobs", body, "application/json");
        if (!r || r->status != 201) ++failed;
      }
    });
  for (auto& t : threads) t.join();
  if (failed > 0) std::fprintf(stderr, "bench_memory: %d submissions failed\n", failed.load());
  return failed == 0;
}

// Pages through GET /v1/jobs; returns the number of pages and jobs seen.
std::pair<int, int> list_all(httplib::Client& c) {
  int pages = 0, jobs = 0;
  std::string after;
  for (;;) {
    auto r = c.Get("/v1/jobs?limit=1000" + (after.empty() ? "" : "&after=" + after));
    if (!r || r->status != 200) return {-1, jobs};
    ++pages;
    auto j = json::parse(r->body, nullptr, false);
    if (!j.is_object()) return {-1, jobs};
    jobs += static_cast<int>(j["jobs"].size());
    if (!j.contains("next")) return {pages, jobs};
    after = j["next"].get<std::string>();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value for " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--jobs")
      o.jobs = std::atoi(v.c_str());
    else if (a == "--clients")
      o.clients = std::atoi(v.c_str());
    else if (a == "--rounds")
      o.rounds = std::atoi(v.c_str());
    else if (a == "--scheduler")
      o.scheduler = v;
    else
      return usage(("unknown flag " + a).c_str());
  }
  if (o.jobs < 1 || o.clients < 1 || o.rounds < 1) return usage("--jobs, --clients and --rounds must be >= 1");

  benchkit::TempDir dir("bench-memory");
  benchkit::ServerProcess sched(benchkit::scheduler_argv(o.scheduler, dir.str("tessel.db"), {"--log-level", "warn"}),
                                dir.str("sched.out"));
  if (sched.port() <= 0) {
    std::fprintf(stderr, "bench_memory: scheduler did not start\n");
    return 1;
  }
  const double rss_start = benchkit::status_field(sched.pid(), "VmRSS", true);
  const auto t0 = Clock::now();
  if (!submit_all(sched.port(), o.jobs)) return 1;
  const double submit_s = benchkit::ms_between(t0, Clock::now()) / 1000;
  const double rss_held = benchkit::status_field(sched.pid(), "VmRSS", true);
  const double hwm_held = benchkit::status_field(sched.pid(), "VmHWM", true);

  std::atomic<bool> done{false};
  double rss_max = rss_held;
  std::thread monitor([&] {
    while (!done) {
      rss_max = std::max(rss_max, benchkit::status_field(sched.pid(), "VmRSS", true));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::mutex mu;
  std::vector<double> listing_ms;
  int pages_per_listing = 0, bad = 0;
  std::vector<std::thread> clients;
  for (int i = 0; i < o.clients; ++i)
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", sched.port());
      c.set_read_timeout(120, 0);
      for (int r = 0; r < o.rounds; ++r) {
        const auto start = Clock::now();
        auto [pages, jobs] = list_all(c);
        const double ms = benchkit::ms_between(start, Clock::now());
        std::lock_guard<std::mutex> lk(mu);
        if (pages < 0 || jobs != o.jobs) ++bad;
        pages_per_listing = std::max(pages_per_listing, pages);
        listing_ms.push_back(ms);
      }
    });
  for (auto& t : clients) t.join();
  done = true;
  monitor.join();
  const double hwm_end = benchkit::status_field(sched.pid(), "VmHWM", true);

  const double spec_kib = static_cast<double>(big_spec_body().size()) / 1024;
  std::printf(
      "| jobs | spec KiB | submit s | clients x rounds | pages/listing | listing p50 ms | listing max ms | "
      "bad | RSS start MiB | RSS jobs held MiB | RSS max listing MiB | listing adds MiB | VmHWM MiB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::printf("| %d | %.0f | %.1f | %d x %d | %d | %.0f | %.0f | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", o.jobs,
              spec_kib, submit_s, o.clients, o.rounds, pages_per_listing, benchkit::percentile(listing_ms, 50),
              benchkit::percentile(listing_ms, 100), bad, rss_start, rss_held, rss_max, rss_max - rss_held,
              std::max(hwm_held, hwm_end));
  return bad == 0 ? 0 : 1;
}
