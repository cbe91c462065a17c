// Training checkpoints: one file per saved step, "ckpt-<step, 10 digits>.pt"
// in the output folder, written to a hidden temp file, fsynced and renamed
// into place, so a reader never sees a partial checkpoint.
//
// A checkpoint holds the model config (JSON), model parameters, optimizer
// state (AdamW moments and step counts), the completed step count, the data
// seed and the torch CPU generator state. Training draws no random numbers
// after initialisation and batch sampling is a pure function of
// (seed, step, shard), so resuming from step N reproduces the uninterrupted
// run exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include <torch/nn.h>
#include <torch/optim/optimizer.h>

#include "gpt.h"
#include "model_config.h"
#include "tessel/base/result.hpp"

namespace tessel::workers {

struct CheckpointMeta {
  int64_t step = 0;  // optimizer steps completed
  uint64_t seed = 0;
  nlohmann::json train;  // the run's training options, informational
};

std::filesystem::path checkpoint_path(const std::filesystem::path& dir, int64_t step);
// The step in a checkpoint file name; nullopt when it is not one.
std::optional<int64_t> checkpoint_step(const std::filesystem::path& file);

// Newest checkpoint in `dir` by step; nullopt when there is none (or no dir).
Result<std::optional<std::filesystem::path>> newest_checkpoint(const std::filesystem::path& dir);

// Creates `dir` if needed. Returns the final path.
Result<std::filesystem::path> save_checkpoint(const std::filesystem::path& dir, Gpt& model,
                                              torch::optim::Optimizer& optimizer, const CheckpointMeta& meta);

struct LoadedModel {
  ModelConfig config;
  CheckpointMeta meta;
  Gpt model{nullptr};
};

// Loads config and parameters onto `device`. `path` is a checkpoint file or
// a folder (its newest checkpoint).
Result<LoadedModel> load_model(const std::filesystem::path& path, torch::Device device);

// Restores optimizer state saved by save_checkpoint into `optimizer`, which
// must have been built over the same parameters in the same order.
Status load_optimizer(const std::filesystem::path& file, torch::optim::Optimizer& optimizer, torch::Device device);

}  // namespace tessel::workers
