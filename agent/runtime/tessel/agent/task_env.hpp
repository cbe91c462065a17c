#pragma once
// The environment each task process sees. Pure functions: no getenv, no clock.
//
// task_environment(): base env (see minimal_base_env) + the job's env, then the
// variables the agent owns, which the job cannot override:
//   The vendor's visibility variables, TESSEL_DEVICE_TYPE and TESSEL_DIST_BACKEND
//   (device_env.hpp: HABANA_VISIBLE_MODULES/DEVICES, CUDA_VISIBLE_DEVICES,
//   ROCR_VISIBLE_DEVICES + HIP_VISIBLE_DEVICES, ...);
//   Gaudi also: HLS_MODULE_ID = the rank's module id (task per device only);
//           PT_ENABLE_INT64_SUPPORT=1 unless the job set it.
//   Always: TESSEL_JOB_ID, TESSEL_NODE, TESSEL_ASSIGNMENT_ID, TESSEL_PORT, RANK,
//           WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR, MASTER_PORT.
//   An array's element ("j-00000042_7", its spec has `array`): TESSEL_ARRAY_ID (the
//           parent, "j-00000042"), TESSEL_ARRAY_INDEX (7, the index as submitted:
//           --array 5-20 gives 5..20), TESSEL_ARRAY_COUNT, and TESSEL_ARRAY_MIN and
//           TESSEL_ARRAY_MAX, its lowest and highest index (as Slurm's
//           SLURM_ARRAY_TASK_MIN/MAX).
//   One task per node (not task per device), for a launcher such as torchrun, unless
//   the job set the variable itself: PET_NNODES = nnodes, PET_NODE_RANK = node_rank,
//   PET_MASTER_ADDR, PET_MASTER_PORT, PET_NPROC_PER_NODE = the assignment's cards (1
//   with none). Task per device sets no PET_* (each task already is one rank).
// A job with 0 cards gets empty visibility variables (it must not see any card).

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/inventory.hpp"

namespace tessel::agent {

using Env = std::map<std::string, std::string>;

// Processes one assignment starts on this node: cards when spec.task_per_device
// (at least 1), else 1.
int local_world_size(const api::Assignment& a);

struct TaskEnvInput {
  const api::Assignment& assignment;
  const api::NodeInventory& inventory;  // Vendor and card UUIDs.
  const Env& base;                      // From minimal_base_env.
  std::string node;
  int local_rank = 0;
  int port = 0;  // TESSEL_PORT.
};
// Fails when a card of the assignment is not in the inventory (UUID lookup).
Result<Env> task_environment(const TaskEnvInput& in);

// The variables inherited from the agent: PATH, HOME, LANG, LC_ALL, USER, LOGNAME,
// SHELL, TZ, TMPDIR (those that are set). `user`/`home`, when given (--run-as),
// replace USER, LOGNAME and HOME.
Env minimal_base_env(const std::function<std::optional<std::string>(const std::string&)>& getenv,
                     const std::optional<std::string>& user = std::nullopt,
                     const std::optional<std::string>& home = std::nullopt);

}  // namespace tessel::agent
