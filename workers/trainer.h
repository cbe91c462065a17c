// run_training: the tessel-train loop. Data-parallel over a Communicator;
// rank 0 prints progress JSON lines and writes checkpoints. Resumes from the
// newest checkpoint in options.out (which every rank must be able to read:
// rank 0 chooses it and the others load the same step).
//
// Each rank owns data_shards / world_size contiguous shards of the corpus
// and draws batch_size / (shards per rank) examples from each, so the global
// batch does not depend on how shards are spread over ranks.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <vector>

#include "dist_env.h"
#include "tessel/base/result.hpp"
#include "tessel/time/clock.hpp"
#include "train_options.h"

namespace tessel::workers {

struct TrainEnv {
  DistEnv dist;
  std::ostream* progress = nullptr;  // rank 0 writes JSON lines here; null: silent
  // Times the progress lines' elapsed_s and tokens_per_s (steady_ns()); null:
  // system_clock(). Must outlive run_training().
  const Clock* clock = nullptr;
  std::function<void(int port)> on_listening;  // see CommunicatorOptions
};

struct TrainSummary {
  int64_t start_step = 0;  // > 0 when resumed
  int64_t final_step = 0;
  double final_loss = 0;                  // mean over ranks, last step run
  std::filesystem::path last_checkpoint;  // rank 0 only
  // All parameters flattened in registration order, as float; filled only
  // with TrainOptions::export_parameters.
  std::vector<float> parameters;
};

Result<TrainSummary> run_training(const TrainOptions& options, const TrainEnv& env);

}  // namespace tessel::workers
