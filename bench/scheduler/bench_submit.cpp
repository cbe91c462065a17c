// bench_submit [SECONDS [POSTGRES_URI]]: starts tessel-scheduler on port 0 with a
// fresh database in a temp dir, then for 1 and 16 concurrent clients (keep-alive
// connections) submits jobs for SECONDS (default 5) and prints acknowledged
// (201) submissions per second, once with --sync full (the default: fsynced,
// on disk) and once with --sync normal (written to the OS only), so the cost of
// the fsync shows as a ratio within one run. With POSTGRES_URI (a database of
// its own, which it fills with jobs), also with --db POSTGRES_URI (each COMMIT
// with synchronous_commit on).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "benchkit.hpp"

namespace {

double run(int port, int clients, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<long> ok{0}, bad{0};
  std::vector<std::thread> threads;
  const std::string body = R"({"command":["python","train.py","--epochs","3"],"devices":8,"name":"bench"})";
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      while (!stop) {
        auto r = c.Post("/v1/jobs", body, "application/json");
        if (r && r->status == 201)
          ++ok;
        else if (++bad <= 3)
          std::fprintf(stderr, "  failed: %s\n",
                       r ? (std::to_string(r->status) + " " + r->body).c_str() : httplib::to_string(r.error()).c_str());
      }
    });
  }
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));  // Benchmark duration, not a test wait.
  stop = true;
  for (auto& t : threads) t.join();
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bad) std::fprintf(stderr, "  %ld failed requests\n", bad.load());
  return static_cast<double>(ok) / el;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::stod(argv[1]) : 5.0;
  const std::string postgres = argc > 2 ? argv[2] : "";
  const tessel::benchkit::TempDir dir("tessel-bench");
  std::vector<std::string> stores = {"full", "normal"};
  if (!postgres.empty()) stores.emplace_back("postgres");
  for (const std::string& sync : stores)
    for (int clients : {1, 16}) {
      const bool pg = sync == "postgres";
      const std::string db = pg ? postgres : dir.str("b" + sync + std::to_string(clients) + ".db");
      const std::string out = dir.str("b" + sync + std::to_string(clients) + ".out");
      const tessel::benchkit::ServerProcess s(
          tessel::benchkit::scheduler_argv(TESSEL_SCHEDULER_BIN, db,
                                           pg ? std::vector<std::string>{"--log-level", "warn"}
                                              : std::vector<std::string>{"--sync", sync, "--log-level", "warn"}),
          out);
      if (s.port() <= 0) {
        std::fprintf(stderr, "could not start %s\n", TESSEL_SCHEDULER_BIN);
        return 1;
      }
      std::printf("%-13s clients=%2d  acknowledged submissions/s: %.0f\n", (pg ? "postgres" : "sync=" + sync).c_str(),
                  clients, run(s.port(), clients, seconds));
      // Scheduling passes that ran meanwhile (every submission triggers one, coalesced).
      httplib::Client c("127.0.0.1", s.port());
      if (auto m = c.Get("/metrics")) {
        std::istringstream in(m->body);
        std::string line;
        while (std::getline(in, line))
          if (line.rfind("tessel_scheduling_latency_seconds_sum", 0) == 0 ||
              line.rfind("tessel_scheduling_latency_seconds_count", 0) == 0)
            std::printf("  %s\n", line.c_str());
      }
      std::fflush(stdout);
    }
  return 0;
}
