#include "generate.h"

#include <random>

namespace tessel::workers {
namespace {

torch::Tensor window_tensor(const std::vector<uint8_t>& tokens, size_t start, torch::Device device) {
  std::vector<int64_t> ids(tokens.begin() + static_cast<std::ptrdiff_t>(start), tokens.end());
  return torch::tensor(ids, torch::kLong).view({1, -1}).to(device);
}

// Last position's logits as floats on the host.
std::vector<float> last_logits(const torch::Tensor& logits) {
  auto row = logits.select(1, logits.size(1) - 1).select(0, 0).to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
}

}  // namespace

std::vector<uint8_t> generate_tokens(Gpt& model, const std::vector<uint8_t>& prompt, const SamplingParams& params,
                                     DecodeMode mode, const TokenSink& on_token) {
  TORCH_CHECK(!prompt.empty(), "generate_tokens: empty prompt");
  c10::InferenceMode guard;
  model->eval();
  const auto device = model->tok_emb->weight.device();
  const size_t context = static_cast<size_t>(model->config().context);
  std::mt19937_64 rng(params.seed);

  std::vector<uint8_t> tokens = prompt;
  size_t start = tokens.size() > context ? tokens.size() - context : 0;
  KvCache cache = model->empty_cache();
  std::vector<float> logits =
      last_logits(mode == DecodeMode::kKvCache ? model->forward_cached(window_tensor(tokens, start, device), cache)
                                               : model->forward(window_tensor(tokens, start, device)));
  for (int64_t i = 0; i < params.max_new_tokens; ++i) {
    tokens.push_back(static_cast<uint8_t>(choose_token(logits, params, rng)));
    if (on_token && !on_token(tokens.back())) break;
    if (i + 1 == params.max_new_tokens) break;
    bool refill = false;
    if (tokens.size() - start > context) {
      start = tokens.size() - context / 2;
      refill = true;
    }
    torch::Tensor out;
    if (mode == DecodeMode::kFullRecompute) {
      out = model->forward(window_tensor(tokens, start, device));
    } else if (refill) {
      cache = model->empty_cache();
      out = model->forward_cached(window_tensor(tokens, start, device), cache);
    } else {  // One new position: the lean decoding step.
      out = model->forward_step(torch::full({1, 1}, static_cast<int64_t>(tokens.back()), torch::kLong).to(device),
                                {&cache});
    }
    logits = last_logits(out);
  }
  return std::vector<uint8_t>(tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()), tokens.end());
}

}  // namespace tessel::workers
