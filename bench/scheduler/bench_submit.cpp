// bench_submit [SECONDS]: starts tessel-scheduler on port 0 with a fresh
// database in a temp dir, then for 1 and 16 concurrent clients (keep-alive
// connections) submits jobs for SECONDS (default 5) and prints acknowledged
// (201) submissions per second, once with --sync full (the default: fsynced,
// on disk) and once with --sync normal (written to the OS only), so the cost of
// the fsync shows as a ratio within one run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace {

struct Server {
  pid_t pid = -1;
  int port = 0;
  Server(const std::string& db, const std::string& sync) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      execl(TESSEL_SCHEDULER_BIN, TESSEL_SCHEDULER_BIN, "--listen", "127.0.0.1:0", "--db", db.c_str(), "--sync",
            sync.c_str(), "--log-level", "warn", nullptr);
      _exit(127);
    }
    close(fds[1]);
    FILE* f = fdopen(fds[0], "r");
    char line[256];
    if (fgets(line, sizeof line, f)) {
      std::string l(line);
      port = std::stoi(l.substr(l.rfind(':') + 1));
    }
  }
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

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
  auto dir = std::filesystem::temp_directory_path() / ("tessel-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (const std::string sync : {"full", "normal"})
    for (int clients : {1, 16}) {
      Server s((dir / ("b" + sync + std::to_string(clients) + ".db")).string(), sync);
      if (s.port <= 0) {
        std::fprintf(stderr, "could not start %s\n", TESSEL_SCHEDULER_BIN);
        return 1;
      }
      std::printf("sync=%-6s clients=%2d  acknowledged submissions/s: %.0f\n", sync.c_str(), clients,
                  run(s.port, clients, seconds));
      // Scheduling passes that ran meanwhile (every submission triggers one, coalesced).
      httplib::Client c("127.0.0.1", s.port);
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
  std::filesystem::remove_all(dir);
  return 0;
}
