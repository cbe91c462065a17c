#include "tessel/agent/device_env.hpp"

#include <algorithm>
#include <vector>

namespace tessel::agent {

namespace {

using Env = std::map<std::string, std::string>;

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
  return out;
}

std::string join_ints(const std::vector<int>& v) {
  std::vector<std::string> s;
  s.reserve(v.size());
  for (int x : v) s.push_back(std::to_string(x));
  return join(s);
}

Result<const api::Device*> find_device(const api::NodeInventory& inv, int index) {
  for (const auto& d : inv.devices)
    if (d.index == index) return &d;
  return Error{"GPU index " + std::to_string(index) + " is not in the node inventory"};
}

Status set_cuda(Env& env, const api::Assignment& a, const api::NodeInventory& inv) {
  std::vector<std::string> uuids;
  for (int idx : a.indices) {
    auto d = find_device(inv, idx);
    if (!d) return d.error();
    if ((*d)->uuid.empty()) return Error{"GPU index " + std::to_string(idx) + " has no UUID"};
    uuids.push_back((*d)->uuid);
  }
  env["CUDA_VISIBLE_DEVICES"] = join(uuids);
  return ok_status();
}

// ROCr takes its own UUIDs (GPU-<asic serial>) or indices; HIP then numbers the cards
// ROCr left visible from 0.
Status set_rocr(Env& env, const api::Assignment& a, const api::NodeInventory& inv) {
  std::vector<std::string> ids;
  std::vector<int> hip;
  for (int idx : a.indices) {
    auto d = find_device(inv, idx);
    if (!d) return d.error();
    const std::string& uuid = (*d)->uuid;
    ids.push_back(uuid.rfind("GPU-", 0) == 0 ? uuid : std::to_string(idx));
    hip.push_back(static_cast<int>(hip.size()));
  }
  env["ROCR_VISIBLE_DEVICES"] = join(ids);
  env["HIP_VISIBLE_DEVICES"] = join_ints(hip);
  return ok_status();
}

// Ascend takes logical device ids, ascending only (CANN stops reading at the first id
// out of order); the task then sees its NPUs as 0..n-1.
std::string ascend_ids(const api::Assignment& a) {
  std::vector<int> ids = a.indices;
  std::sort(ids.begin(), ids.end());
  return join_ints(ids);
}

// Level Zero in COMPOSITE mode: one root device per card, so ZE_AFFINITY_MASK names cards
// by xpu-smi's device id (its Level Zero enumeration order), tiles stay inside their card.
void set_level_zero(Env& env, const api::Assignment& a) {
  env["ZE_FLAT_DEVICE_HIERARCHY"] = "COMPOSITE";
  env["ZE_AFFINITY_MASK"] = join_ints(a.indices);
}

// NEURON_RT_VISIBLE_CORES takes global NeuronCore ids: device d of c cores holds
// d*c .. d*c+c-1. Adjacent devices merge into one range ("0-7"), as the runtime wants
// one contiguous range per process.
Status set_neuron(Env& env, const api::Assignment& a, const api::NodeInventory& inv) {
  std::vector<std::pair<int, int>> ranges;  // Inclusive.
  std::vector<int> ids = a.indices;
  std::sort(ids.begin(), ids.end());
  for (int idx : ids) {
    auto d = find_device(inv, idx);
    if (!d) return d.error();
    const int c = (*d)->cores;
    if (c <= 0) return Error{"Neuron device " + std::to_string(idx) + " has no NeuronCore count"};
    const int first = idx * c;
    if (!ranges.empty() && ranges.back().second + 1 == first) {
      ranges.back().second = first + c - 1;
    } else {
      ranges.emplace_back(first, first + c - 1);
    }
  }
  std::vector<std::string> parts;
  parts.reserve(ranges.size());
  for (const auto& [lo, hi] : ranges)
    parts.push_back(lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi));
  env["NEURON_RT_VISIBLE_CORES"] = join(parts);
  return ok_status();
}

// libtpu: the chips (indices, ascending), the shape they form (x,y,z: 1 -> 1x1, 2 ->
// 1x2, 4 -> 2x2, 8 -> 2x4) and one process for them all.
Status set_tpu(Env& env, const api::Assignment& a) {
  std::vector<int> ids = a.indices;
  std::sort(ids.begin(), ids.end());
  env["TPU_VISIBLE_CHIPS"] = join_ints(ids);
  env["TPU_PROCESS_BOUNDS"] = "1,1,1";
  switch (ids.size()) {
    case 0: env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = "0,0,0"; return ok_status();
    case 1: env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = "1,1,1"; return ok_status();
    case 2: env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = "1,2,1"; return ok_status();
    case 4: env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = "2,2,1"; return ok_status();
    case 8: env["TPU_CHIPS_PER_PROCESS_BOUNDS"] = "2,4,1"; return ok_status();
    default: return Error{"no TPU sub-slice of " + std::to_string(ids.size()) + " chips"};
  }
}

}  // namespace

DeviceRuntime device_runtime(api::Vendor v) {
  switch (v) {
    case api::Vendor::habana: return {"hpu", "hccl"};
    case api::Vendor::nvidia:
    case api::Vendor::amd: return {"cuda", "nccl"};  // ROCm's PyTorch is "cuda" with RCCL behind "nccl".
    case api::Vendor::intel: return {"xpu", "xccl"};
    case api::Vendor::ascend: return {"npu", "hccl"};
    case api::Vendor::neuron: return {"neuron", "xla"};
    case api::Vendor::tpu: return {"tpu", "xla"};
    case api::Vendor::cambricon: return {"mlu", "cncl"};
    case api::Vendor::mthreads: return {"musa", "mccl"};
  }
  return {"cpu", "gloo"};
}

Status add_device_env(Env& env, api::Vendor vendor, const api::Assignment& a, const api::NodeInventory& inventory) {
  const DeviceRuntime rt = device_runtime(vendor);
  env["TESSEL_DEVICE_TYPE"] = rt.device_type;
  env["TESSEL_DIST_BACKEND"] = rt.dist_backend;
  switch (vendor) {
    case api::Vendor::habana:
      env["HABANA_VISIBLE_MODULES"] = join_ints(a.module_ids);
      env["HABANA_VISIBLE_DEVICES"] = join_ints(a.indices);
      return ok_status();
    case api::Vendor::nvidia: return set_cuda(env, a, inventory);
    case api::Vendor::amd: return set_rocr(env, a, inventory);
    case api::Vendor::ascend: env["ASCEND_RT_VISIBLE_DEVICES"] = ascend_ids(a); return ok_status();
    case api::Vendor::intel: set_level_zero(env, a); return ok_status();
    case api::Vendor::neuron: return set_neuron(env, a, inventory);
    case api::Vendor::tpu: return set_tpu(env, a);
    case api::Vendor::cambricon: env["MLU_VISIBLE_DEVICES"] = join_ints(a.indices); return ok_status();
    case api::Vendor::mthreads: env["MUSA_VISIBLE_DEVICES"] = join_ints(a.indices); return ok_status();
    default: return Error{"no device variables for vendor " + api::to_string(vendor)};
  }
}

}  // namespace tessel::agent
