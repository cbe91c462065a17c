// tessel-train: trains the byte-level transformer on a text file.
// Progress: JSON lines on stdout (rank 0). Errors: one line on stderr and a
// non-zero exit status. Distributed runs read torchrun's variables.
#include <iostream>

#include <CLI/CLI.hpp>

#include "device.h"
#include "dist_env.h"
#include "memory.h"
#include "trainer.h"

using namespace tessel::workers;

int main(int argc, char** argv) {
  keep_freed_memory();
  TrainOptions o;
  CLI::App app{"tessel-train: train a byte-level transformer LM (LibTorch, c10d data parallel)"};
  std::string data, out;
  app.add_option("--data", data, "training text file")->required();
  app.add_option("--out", out, "checkpoint folder (resumes from its newest checkpoint)")->required();
  app.add_option("--steps", o.steps, "total optimizer steps")->required();
  app.add_option("--checkpoint-every", o.checkpoint_every, "checkpoint period in steps (0: only at the end)");
  app.add_option("--device", o.device, "auto|cpu|cuda|hpu");
  app.add_option("--hpu-plugin", o.hpu_plugin, "Gaudi PyTorch plugin library for --device hpu");
  app.add_option("--precision", o.precision,
                 "auto|fp32|bf16: bf16 matrix products and attention with fp32 weights and optimizer state "
                 "(auto: bf16 on hpu, else fp32)");
  app.add_option("--batch-size", o.batch_size, "sequences per rank per step");
  app.add_option("--context", o.model.context, "context length in bytes");
  app.add_option("--layers", o.model.layers, "transformer blocks");
  app.add_option("--heads", o.model.heads, "attention heads");
  app.add_option("--dim", o.model.dim, "model width");
  bool untied = false;
  app.add_flag("--untied-head", untied, "separate output head instead of the tied token embedding");
  app.add_option("--lr", o.lr, "peak learning rate (AdamW)");
  app.add_option("--warmup", o.warmup, "warm-up steps (default min(100, steps/10))");
  app.add_option("--weight-decay", o.weight_decay, "AdamW weight decay on matrices");
  app.add_option("--seed", o.seed, "initialisation and data-sampling seed");
  app.add_option("--threads", o.threads, "torch intra-op threads (0: torch default)");
  app.add_option("--log-every", o.log_every, "progress line period in steps");
  app.add_option("--data-shards", o.data_shards, "data shards (default: world size)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "tessel-train: " << e.what() << std::endl;
    return 2;
  }
  o.data = data;
  o.out = out;
  o.model.tied_head = !untied;
  if (auto s = validate(o); !s) {
    std::cerr << "tessel-train: " << s.error().message << std::endl;
    return 2;
  }
  auto dist = dist_env_from(process_env());
  if (!dist) {
    std::cerr << "tessel-train: " << dist.error().message << std::endl;
    return 2;
  }
  if (o.threads > 0) set_torch_threads(o.threads);
  TrainEnv env;
  env.dist = *dist;
  env.progress = &std::cout;
  auto result = run_training(o, env);
  if (!result) {
    std::cerr << "tessel-train: rank " << dist->rank << ": " << result.error().message << std::endl;
    return 1;
  }
  return 0;
}
