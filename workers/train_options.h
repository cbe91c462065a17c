// TrainOptions: everything tessel-train's flags set, plus test hooks.
// Plain data; validate() names the flag at fault. No LibTorch here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model_config.h"
#include "tessel/base/result.hpp"

namespace tessel::workers {

struct TrainOptions {
  std::filesystem::path data;
  std::filesystem::path out;
  int64_t steps = 200;
  int64_t checkpoint_every = 0;  // 0: only at the end
  std::string device = "auto";
  std::string hpu_plugin = "/usr/lib/habanalabs/libhabana_pytorch_plugin.so";
  std::string precision = "auto";  // auto|fp32|bf16 (precision.h); auto: bf16 on hpu, else fp32
  int64_t batch_size = 16;         // per rank
  ModelConfig model;
  double lr = 3e-3;
  int64_t warmup = -1;  // -1: min(100, steps / 10)
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0: off
  uint64_t seed = 1337;
  int threads = 0;          // 0: leave torch's default
  int64_t log_every = 10;   // progress line every N steps (and the last)
  int64_t data_shards = 0;  // 0: one shard per rank; must be a multiple of world size
  size_t bucket_bytes = 25u << 20;

  // Test hook simulating preemption: return after this many completed
  // steps without a final checkpoint, as if the process had been killed.
  std::optional<int64_t> stop_after;
  // Test hook: copy the final parameters into TrainSummary.
  bool export_parameters = false;
};

Status validate(const TrainOptions& options);
int64_t effective_warmup(const TrainOptions& options);
nlohmann::json to_json(const TrainOptions& options);

}  // namespace tessel::workers
