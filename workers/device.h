// Device selection for the workers. `--device` is auto|cpu|cuda|hpu:
// auto picks CUDA when torch sees a GPU, else CPU. hpu dlopen()s the Gaudi
// PyTorch plugin (which registers the HPU backend with torch) and fails with
// an error if it cannot be loaded; nothing silently falls back to CPU.
#pragma once

#include <string>

#include <c10/core/Device.h>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct DeviceRequest {
  std::string kind = "auto";  // auto|cpu|cuda|hpu
  std::string hpu_plugin = "/usr/lib/habanalabs/libhabana_pytorch_plugin.so";
  int local_rank = 0;  // device index for cuda/hpu
};

Result<c10::Device> select_device(const DeviceRequest& request);

// torch::set_num_threads, for callers that do not include LibTorch.
void set_torch_threads(int threads);

}  // namespace tessel::workers
