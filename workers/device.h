// Device selection for the workers. `--device` is auto|cpu|cuda|hpu:
// auto picks CUDA when torch sees a GPU, else CPU. hpu dlopen()s the Gaudi
// PyTorch plugin (which registers the HPU backend with torch) and fails with
// an error if it cannot be loaded; nothing silently falls back to CPU.
// select_precision() resolves --precision on the chosen device and refuses bf16
// where LibTorch cannot run it (an error naming --precision, at start).
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "precision.h"
#include "tessel/base/result.hpp"

namespace tessel::workers {

struct DeviceRequest {
  std::string kind = "auto";  // auto|cpu|cuda|hpu
  std::string hpu_plugin = "/usr/lib/habanalabs/libhabana_pytorch_plugin.so";
  int local_rank = 0;              // device index for cuda/hpu
  std::string precision = "auto";  // auto|fp32|bf16, see precision.h
};

Result<c10::Device> select_device(const DeviceRequest& request);

// request.precision on `device`: auto becomes default_precision(device's type).
// bf16 is checked by running a small bf16 matrix product and softmax there; a
// LibTorch build (or device plugin) that cannot is an invalid_argument error
// naming --precision and the device.
Result<Precision> select_precision(const DeviceRequest& request, const c10::Device& device);

// torch::set_num_threads, for callers that do not include LibTorch.
void set_torch_threads(int threads);

}  // namespace tessel::workers
