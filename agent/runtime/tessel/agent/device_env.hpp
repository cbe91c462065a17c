#pragma once
// The variables that tell a task which cards it has and what runtime drives them, per
// vendor. Pure: the assignment and the inventory in, variables out.
//
//   habana: HABANA_VISIBLE_MODULES (module ids ascending) and HABANA_VISIBLE_DEVICES
//           (the matching indices, same order); hpu, hccl.
//   nvidia: CUDA_VISIBLE_DEVICES (GPU UUIDs, in the assignment's index order); cuda, nccl.
//   amd:    ROCR_VISIBLE_DEVICES (ROCr ids GPU-<asic serial>, the index for a card
//           without one), HIP_VISIBLE_DEVICES = 0..n-1 (HIP counts the cards ROCr left
//           visible); cuda, nccl (PyTorch's ROCm build names the device cuda and RCCL nccl).
//   ascend: ASCEND_RT_VISIBLE_DEVICES (logical device ids = inventory indices, ascending,
//           as CANN requires); npu, hccl.
// Always: TESSEL_DEVICE_TYPE (the torch device string) and TESSEL_DIST_BACKEND (the
// torch.distributed backend).

#include <map>
#include <string>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

struct DeviceRuntime {
  std::string device_type;   // "hpu", "cuda", "xpu", "npu", ...
  std::string dist_backend;  // "hccl", "nccl", "xccl", ...
};
// What PyTorch calls the device and the collective library of `v`.
DeviceRuntime device_runtime(api::Vendor v);

// Sets the visibility variables of `vendor` for the cards of `a` (a job with no cards
// gets them empty) plus TESSEL_DEVICE_TYPE and TESSEL_DIST_BACKEND. Fails when a card
// the vendor names by UUID is missing from `inventory` or has no UUID.
Status add_device_env(std::map<std::string, std::string>& env, api::Vendor vendor, const api::Assignment& a,
                      const api::NodeInventory& inventory);

}  // namespace tessel::agent
