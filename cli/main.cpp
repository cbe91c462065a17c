// tessel: the command-line client. All logic is in tessel_cli_lib (app.hpp).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "tessel/cli/app.hpp"
#include "tessel/time/clock.hpp"

int main(int argc, char** argv) {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  tessel::cli::Environment env{
      .out = std::cout,
      .err = std::cerr,
      .getenv = [](const std::string& k) -> std::optional<std::string> {
        const char* v = std::getenv(k.c_str());
        if (!v) return std::nullopt;
        return std::string(v);
      },
      .now_unix_ms = [] { return tessel::system_clock().now_ms(); },
      .monotonic =
          [] {
            return std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::nanoseconds(tessel::system_clock().steady_ns()));
          },
      .sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); },
      .cwd = ec ? std::string("/") : cwd.string(),
  };
  std::vector<std::string> args(argv, argv + argc);
  int rc = tessel::cli::run(args, env);
  std::cout.flush();
  return rc;
}
