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
//   intel:  ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE and ZE_AFFINITY_MASK (xpu-smi device ids, in
//           the assignment's order): one device per card, a two-tile Max 1550 is one torch
//           xpu device (tiles are Level Zero sub-devices, used by implicit scaling);
//           xpu, xccl.
//   neuron: NEURON_RT_VISIBLE_CORES, the global NeuronCore ids of the devices as ranges
//           ("4-7"; device d of c cores holds d*c .. d*c+c-1, c = Device::cores); neuron,
//           xla (torch-neuronx runs torch.distributed on the "xla" backend).
//   tpu:    TPU_VISIBLE_CHIPS (chip indices, ascending), TPU_CHIPS_PER_PROCESS_BOUNDS (the
//           sub-slice: 1,1,1 / 1,2,1 / 2,2,1 / 2,4,1 for 1, 2, 4, 8 chips; other counts
//           fail), TPU_PROCESS_BOUNDS=1,1,1 (one process per host); tpu, xla.
//   cambricon: MLU_VISIBLE_DEVICES (cnmon card numbers, in the assignment's order); mlu,
//           cncl.
//   mthreads: MUSA_VISIBLE_DEVICES (mthreads-gmi indices, in the assignment's order); musa,
//           mccl.
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
// the vendor names by UUID is missing from `inventory` or has no UUID, or when a Neuron
// device is missing or has no core count.
Status add_device_env(std::map<std::string, std::string>& env, api::Vendor vendor, const api::Assignment& a,
                      const api::NodeInventory& inventory);

}  // namespace tessel::agent
