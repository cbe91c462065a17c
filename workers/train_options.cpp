#include "train_options.h"

#include <algorithm>
#include <cmath>

#include "precision.h"

namespace tessel::workers {

Status validate(const TrainOptions& o) {
  if (o.data.empty()) return Error::invalid("--data is required", "data");
  if (o.out.empty()) return Error::invalid("--out is required", "out");
  if (o.steps < 1) return Error::invalid("--steps must be >= 1, got " + std::to_string(o.steps), "steps");
  if (o.checkpoint_every < 0)
    return Error::invalid("--checkpoint-every must be >= 0, got " + std::to_string(o.checkpoint_every),
                          "checkpoint-every");
  if (o.batch_size < 1 || o.batch_size > 1 << 20)
    return Error::invalid("--batch-size must be in [1, 1048576], got " + std::to_string(o.batch_size), "batch-size");
  if (!(o.lr > 0) || !std::isfinite(o.lr) || o.lr > 10) return Error::invalid("--lr must be in (0, 10]", "lr");
  if (o.warmup < -1) return Error::invalid("--warmup must be >= 0", "warmup");
  if (o.threads < 0) return Error::invalid("--threads must be >= 0", "threads");
  if (o.log_every < 1) return Error::invalid("--log-every must be >= 1", "log-every");
  if (o.data_shards < 0) return Error::invalid("--data-shards must be >= 0", "data-shards");
  if (!(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1))
    return Error::invalid("min_lr_ratio must be in [0, 1]", "min_lr_ratio");
  if (!(o.weight_decay >= 0)) return Error::invalid("--weight-decay must be >= 0", "weight-decay");
  if (auto p = parse_precision(o.precision); !p) return p.error();
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
