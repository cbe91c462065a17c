#include "train_options.h"

#include <algorithm>
#include <cmath>

namespace tessel::workers {

Status validate(const TrainOptions& o) {
  if (o.data.empty()) return Error{"--data is required"};
  if (o.out.empty()) return Error{"--out is required"};
  if (o.steps < 1) return Error{"--steps must be >= 1, got " + std::to_string(o.steps)};
  if (o.checkpoint_every < 0)
    return Error{"--checkpoint-every must be >= 0, got " + std::to_string(o.checkpoint_every)};
  if (o.batch_size < 1 || o.batch_size > 1 << 20)
    return Error{"--batch-size must be in [1, 1048576], got " + std::to_string(o.batch_size)};
  if (!(o.lr > 0) || !std::isfinite(o.lr) || o.lr > 10) return Error{"--lr must be in (0, 10]"};
  if (o.warmup < -1) return Error{"--warmup must be >= 0"};
  if (o.threads < 0) return Error{"--threads must be >= 0"};
  if (o.log_every < 1) return Error{"--log-every must be >= 1"};
  if (o.data_shards < 0) return Error{"--data-shards must be >= 0"};
  if (!(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1)) return Error{"min_lr_ratio must be in [0, 1]"};
  if (!(o.weight_decay >= 0)) return Error{"--weight-decay must be >= 0"};
  return validate(o.model);
}

int64_t effective_warmup(const TrainOptions& o) {
  return o.warmup >= 0 ? o.warmup : std::min<int64_t>(100, o.steps / 10);
}

nlohmann::json to_json(const TrainOptions& o) {
  return {{"data", o.data.string()},
          {"steps", o.steps},
          {"batch_size", o.batch_size},
          {"lr", o.lr},
          {"warmup", effective_warmup(o)},
          {"min_lr_ratio", o.min_lr_ratio},
          {"weight_decay", o.weight_decay},
          {"grad_clip", o.grad_clip},
          {"seed", o.seed},
          {"data_shards", o.data_shards}};
}

}  // namespace tessel::workers
