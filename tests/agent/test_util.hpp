#pragma once
// Helpers for agent tests: temp dirs and polling with a deadline (no sleeps to wait).
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "tessel/api/agent_protocol.hpp"

using namespace tessel;
namespace agent_test {

inline std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "tessel-agent-test-XXXXXX").string();
  return ::mkdtemp(tmpl.data());
}

// Re-checks `cond` every few ms until it holds or `timeout` passes.
inline bool poll_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

inline api::Assignment gaudi_assignment(std::vector<int> modules, std::vector<int> indices) {
  api::Assignment a;
  a.job_id = "j1";
  a.attempt = 0;
  a.node_rank = 0;
  a.nnodes = 1;
  a.id = api::assignment_id(a.job_id, a.attempt, a.node_rank);
  a.module_ids = std::move(modules);
  a.indices = std::move(indices);
  a.master_addr = "10.0.0.1";
  a.master_port = 29500;
  a.spec.command = {"/bin/true"};
  a.spec.devices = static_cast<int>(a.module_ids.size());
  return a;
}

}  // namespace agent_test
