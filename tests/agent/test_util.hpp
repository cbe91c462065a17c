#pragma once
// Helpers for agent tests: a Gaudi assignment to start from. Temp dirs and waits
// come from the test kit (tests/support).
#include <vector>

#include "eventually.hpp"
#include "temp_dir.hpp"
#include "tessel/api/agent_protocol.hpp"

using namespace tessel;
namespace agent_test {

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
