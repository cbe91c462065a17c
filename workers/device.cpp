#include "device.h"
#include "torch_error.h"

#include <dlfcn.h>

#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/utils.h>

namespace tessel::workers {

Result<c10::Device> select_device(const DeviceRequest& r) {
  if (r.kind == "cpu") return c10::Device(c10::kCPU);
  if (r.kind == "auto") {
    if (torch::cuda::is_available())
      return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(r.local_rank % torch::cuda::device_count()));
    return c10::Device(c10::kCPU);
  }
  if (r.kind == "cuda") {
    if (!torch::cuda::is_available())
      return Error{"--device cuda: torch sees no CUDA device (no GPU, or LibTorch built without CUDA)"};
    const auto count = static_cast<int>(torch::cuda::device_count());
    if (r.local_rank >= count)
      return Error{"--device cuda: LOCAL_RANK " + std::to_string(r.local_rank) + " but only " + std::to_string(count) +
                   " CUDA device(s)"};
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(r.local_rank));
  }
  if (r.kind == "hpu") {
    // Kept loaded for the life of the process: the plugin registers kernels.
    void* handle = ::dlopen(r.hpu_plugin.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return Error{"--device hpu: cannot load Gaudi PyTorch plugin " + r.hpu_plugin + ": " +
                   (why ? why : "unknown dlopen error") + " (set --hpu-plugin)"};
    }
    return c10::Device(c10::kHPU, static_cast<c10::DeviceIndex>(r.local_rank));
  }
  return Error::invalid("--device must be auto, cpu, cuda or hpu, got '" + r.kind + "'", "device");
}

Result<Precision> select_precision(const DeviceRequest& r, const c10::Device& device) {
  auto parsed = parse_precision(r.precision);
  if (!parsed) return parsed.error();
  const Precision precision = parsed->value_or(default_precision(c10::DeviceTypeName(device.type(), true)));
  if (precision == Precision::kFp32) return precision;
  try {
    // What the bf16 forward does (gpt.cpp): bf16 products, fp32 softmax.
    torch::NoGradGuard no_grad;
    auto a = torch::ones({4, 4}, torch::TensorOptions().dtype(torch::kBFloat16).device(device));
    auto p = torch::softmax(torch::matmul(a, a), -1, torch::kFloat).to(torch::kBFloat16);
    (void)torch::matmul(p, a).to(torch::kCPU, torch::kFloat);
  } catch (const std::exception& e) {
    return Error::invalid(
        "--precision bf16: LibTorch cannot compute in bfloat16 on " + device.str() + ": " + describe(e), "precision");
  }
  return precision;
}

void set_torch_threads(int threads) { torch::set_num_threads(threads); }

}  // namespace tessel::workers
