// DistEnv: the torchrun contract (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) parsed from an injected environment lookup. Absent variables
// mean a single-process run. No LibTorch here.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;  // 0 only in-process: rank 0 binds any port
};

using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup process_env();

// Errors name the variable, e.g. "RANK=3 is not below WORLD_SIZE=2".
Result<DistEnv> dist_env_from(const EnvLookup& env);

}  // namespace tessel::workers
