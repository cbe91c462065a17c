#include "trainer.h"
#include "torch_error.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include <torch/types.h>  // before nn/utils: clip_grad.h uses Tensor unqualified
#include <torch/nn.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include "batch_sampler.h"
#include "checkpoint.h"
#include "communicator.h"
#include "device.h"
#include "gpt.h"
#include "lr_schedule.h"
#include "throughput.h"

namespace tessel::workers {
namespace {

Result<std::vector<uint8_t>> read_corpus(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"--data " + path.string() + ": cannot open: " + std::strerror(errno)};
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Error{"--data " + path.string() + ": read error"};
  return bytes;
}

// Rows of context+1 bytes starting at each offset: inputs and shifted targets.
std::pair<torch::Tensor, torch::Tensor> make_batch(const std::vector<uint8_t>& corpus,
                                                   const std::vector<int64_t>& offsets, int64_t context,
                                                   torch::Device device) {
  auto rows = torch::empty({static_cast<int64_t>(offsets.size()), context + 1}, torch::kLong);
  auto acc = rows.accessor<int64_t, 2>();
  for (size_t i = 0; i < offsets.size(); ++i)
    for (int64_t t = 0; t <= context; ++t) acc[static_cast<int64_t>(i)][t] = corpus[offsets[i] + t];
  rows = rows.to(device);
  return {rows.slice(1, 0, context), rows.slice(1, 1, context + 1)};
}

void emit(std::ostream* out, const nlohmann::json& line) {
  if (out) *out << line.dump() << std::endl;
}

// The shards each rank reads: the error names the flag that does not divide.
Result<int64_t> shards_per_rank_of(const TrainOptions& o, int64_t shards, int world) {
  if (shards % world != 0)
    return Error::invalid(
        "--data-shards " + std::to_string(shards) + " is not a multiple of WORLD_SIZE " + std::to_string(world),
        "data-shards");
  const int64_t shards_per_rank = shards / world;
  if (o.batch_size % shards_per_rank != 0)
    return Error::invalid("--batch-size " + std::to_string(o.batch_size) + " is not divisible by the " +
                              std::to_string(shards_per_rank) + " data shards per rank",
                          "batch-size");
  return shards_per_rank;
}

// AdamW's two groups: weight decay on matrices, none on biases and norms.
std::vector<torch::optim::OptimizerParamGroup> param_groups(Gpt& model, const TrainOptions& o) {
  std::vector<torch::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(o.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(o.lr).betas({0.9, 0.95}).weight_decay(0.0)));
  return groups;
}

// Resume: rank 0 picks the newest checkpoint, everyone loads that step into `model`
// and `optimizer`. Returns the step to start from (0: no checkpoint).
Result<int64_t> resume(const TrainOptions& o, int rank, Communicator& comm, Gpt& model, torch::optim::AdamW& optimizer,
                       const torch::Device& device, std::ostream* progress) {
  int64_t start = 0;
  if (rank == 0) {
    auto newest = newest_checkpoint(o.out);
    if (!newest) return newest.error().wrap("looking for checkpoints");
    if (newest->has_value()) start = checkpoint_step(**newest).value();
  }
  auto start_t = torch::tensor({start}, torch::kLong);
  if (auto s = comm.broadcast_from_rank0({start_t}); !s) return s.error().wrap("agreeing on resume step");
  start = start_t.item<int64_t>();
  if (start == 0) return start;
  const auto file = checkpoint_path(o.out, start);
  auto loaded = load_model(file, device);
  if (!loaded) return loaded.error().wrap("resuming");
  if (to_json(loaded->config) != to_json(o.model))
    return Error::conflict("resuming from " + file.string() + ": its model config " + to_json(loaded->config).dump() +
                           " differs from the flags " + to_json(o.model).dump());
  if (loaded->meta.seed != o.seed)
    return Error::conflict("resuming from " + file.string() + ": it was trained with --seed " +
                           std::to_string(loaded->meta.seed) + ", not " + std::to_string(o.seed));
  {
    torch::NoGradGuard no_grad;
    auto src = loaded->model->parameters();
    auto dst = model->parameters();
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
  }
  if (auto s = load_optimizer(file, optimizer, device); !s) return s.error().wrap("resuming");
  emit(progress, {{"event", "resume"}, {"step", start}, {"checkpoint", file.string()}});
  return start;
}

// This rank's batch at `step`: per_shard offsets from each of its shards, from `first` on.
std::vector<int64_t> rank_offsets(int64_t n, int64_t first, int64_t shards_per_rank, int64_t shards, int64_t per_shard,
                                  const TrainOptions& o, int64_t step) {
  std::vector<int64_t> offsets;
  for (int64_t s = first; s < first + shards_per_rank; ++s) {
    auto part = sample_offsets(n, s, shards, o.model.context, per_shard, o.seed, step);
    offsets.insert(offsets.end(), part.begin(), part.end());
  }
  return offsets;
}

// The parameters as one float vector, in order (for tests that compare runs).
std::vector<float> flat_parameters(const std::vector<torch::Tensor>& params) {
  std::vector<float> out;
  for (const auto& p : params) {
    auto flat = p.detach().to(torch::kCPU, torch::kFloat).contiguous().view({-1});
    out.insert(out.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return out;
}

// After a step's backward pass: averages the gradients and the loss over the ranks,
// clips the gradients (grad_clip > 0), sets the learning rate and steps the
// optimizer. Returns the loss averaged over the ranks.
Result<double> average_and_step(Communicator& comm, std::vector<torch::Tensor>& params, const torch::Tensor& loss,
                                torch::optim::AdamW& optimizer, double grad_clip, double lr) {
  std::vector<torch::Tensor> reduce;
  reduce.reserve(params.size() + 1);
  for (auto& p : params) reduce.push_back(p.grad());
  auto loss_sum = loss.detach().reshape({1}).clone();
  reduce.push_back(loss_sum);
  if (auto s = comm.allreduce_mean(reduce); !s) return s.error();
  if (grad_clip > 0) torch::nn::utils::clip_grad_norm_(params, grad_clip);
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optimizer.step();
  return loss_sum.item<double>();
}

}  // namespace

Result<TrainSummary> run_training(const TrainOptions& o, const TrainEnv& env) {
  if (auto s = validate(o); !s) return s.error();
  ThroughputMeter meter(env.clock ? *env.clock : system_clock());  // elapsed_s counts from here
  const int world = env.dist.world_size;
  const int rank = env.dist.rank;
  std::ostream* progress = rank == 0 ? env.progress : nullptr;

  const int64_t shards = o.data_shards > 0 ? o.data_shards : world;
  auto per_rank = shards_per_rank_of(o, shards, world);
  if (!per_rank) return per_rank.error();
  const int64_t shards_per_rank = *per_rank;
  auto corpus = read_corpus(o.data);
  if (!corpus) return corpus.error();
  const auto n = static_cast<int64_t>(corpus->size());
  if (auto s = check_shards(n, shards, o.model.context); !s) return s.error();

  const DeviceRequest request{o.device, o.hpu_plugin, env.dist.local_rank, o.precision};
  auto device = select_device(request);
  if (!device) return device.error();
  auto precision = select_precision(request, *device);
  if (!precision) return precision.error();
  const std::string precision_name = to_string(*precision);
  CommunicatorOptions copts;
  copts.on_listening = env.on_listening;
  copts.bucket_bytes = o.bucket_bytes;
  auto comm_r = Communicator::connect(env.dist, copts);
  if (!comm_r) return comm_r.error();
  Communicator& comm = **comm_r;
  emit(progress, {{"event", "start"},
                  {"device", device->str()},
                  {"world_size", world},
                  {"backend", comm.backend_note()},
                  {"precision", precision_name},
                  {"model", to_json(o.model)}});

  try {
    Gpt model(o.model, o.seed);
    model->to(*device);  // fp32 parameters (the master weights) and optimizer state in either precision
    model->set_compute_dtype(*precision == Precision::kBf16 ? torch::kBFloat16 : torch::kFloat);
    torch::optim::AdamW optimizer(param_groups(model, o), torch::optim::AdamWOptions(o.lr));

    auto resumed = resume(o, rank, comm, model, optimizer, *device, progress);
    if (!resumed) return resumed.error();
    const int64_t start = *resumed;
    auto params = model->parameters();
    if (auto s = comm.broadcast_from_rank0(params); !s) return s.error().wrap("broadcasting parameters");

    const LrSchedule schedule{o.lr, effective_warmup(o), o.steps, o.min_lr_ratio};
    nlohmann::json train_meta = to_json(o);
    train_meta["precision"] = precision_name;  // informational: any precision loads the checkpoint
    TrainSummary summary;
    summary.start_step = start;
    summary.final_step = start;
    const int64_t end = o.stop_after ? std::min(o.steps, *o.stop_after) : o.steps;
    const int64_t per_shard = o.batch_size / shards_per_rank;
    const int64_t global_tokens = o.batch_size * world * o.model.context;
    meter.restart_interval();  // tokens_per_s of the first line counts from here
    int64_t last_log_step = start;
    model->train();
    for (int64_t step = start; step < end; ++step) {
      const auto offsets = rank_offsets(n, rank * shards_per_rank, shards_per_rank, shards, per_shard, o, step);
      auto [x, y] = make_batch(*corpus, offsets, o.model.context, *device);
      optimizer.zero_grad();
      auto loss = language_model_loss(model->forward(x), y);
      loss.backward();

      const double lr = schedule.at(step);
      auto mean_loss = average_and_step(comm, params, loss, optimizer, o.grad_clip, lr);
      if (!mean_loss) return mean_loss.error().wrap("step " + std::to_string(step + 1));

      const int64_t done = step + 1;
      summary.final_step = done;
      summary.final_loss = *mean_loss;
      if (done % o.log_every == 0 || done == end || done == start + 1) {
        const auto lap = meter.lap(static_cast<double>(global_tokens * (done - last_log_step)));
        emit(progress, {{"step", done},
                        {"loss", summary.final_loss},
                        {"lr", lr},
                        {"precision", precision_name},
                        {"tokens_per_s", lap.per_s},
                        {"elapsed_s", lap.elapsed_s}});
        last_log_step = done;
      }
      const bool periodic = o.checkpoint_every > 0 && done % o.checkpoint_every == 0;
      if (rank == 0 && (periodic || done == o.steps)) {
        auto saved = save_checkpoint(o.out, model, optimizer, CheckpointMeta{done, o.seed, train_meta});
        if (!saved) return saved.error().wrap("checkpoint at step " + std::to_string(done));
        summary.last_checkpoint = *saved;
        emit(progress, {{"event", "checkpoint"}, {"step", done}, {"path", saved->string()}});
      }
    }
    if (o.export_parameters) summary.parameters = flat_parameters(params);
    return summary;
  } catch (const std::exception& e) {
    return Error{std::string("training: ") + describe(e)};
  }
}

}  // namespace tessel::workers
