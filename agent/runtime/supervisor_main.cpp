// tessel-supervisor --task-dir DIR: the per-task supervisor (tessel/agent/supervisor.hpp),
// the one way a task's supervisor runs. A small program of its own, so that starting
// one costs little (the agent binary loads HTTP, TLS and systemd libraries).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>

#include "tessel/agent/supervisor.hpp"

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--task-dir") {
    std::fprintf(stderr, "usage: tessel-supervisor --task-dir DIR\n");
    return 2;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("supervisor"));
  return tessel::agent::run_supervisor(argv[2]);
}
