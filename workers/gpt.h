// Gpt: a byte-level decoder-only transformer written with torch::nn.
// Pre-LayerNorm blocks (causal self-attention + GELU MLP), learned positional
// embedding, tied or untied output head. No dropout, so training draws no
// random numbers after initialisation.
//
// Precision (set_compute_dtype): fp32 by default. In bf16 the matrix products
// (linear layers, attention scores and their weighted sum, the head) take bf16
// inputs, cast where they enter (explicit casts, not LibTorch 1.13's autocast,
// which runs softmax and layer norm in bf16 on CPU and has no hpu key); layer
// norms, softmax, the residual stream and the logits stay fp32, and gradients
// reach fp32 parameters through the casts.
//
// Contracts:
// - forward() takes int64 token ids [B, T] with T <= context and returns
//   float logits [B, T, vocab].
// - forward_cached() appends to `cache` and attends over everything cached;
//   the caller keeps cached length + T <= context (see generate.h for the
//   windowing policy). Positions continue from the cached length.
// - A Gpt is not thread-safe; one thread uses it at a time.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <torch/nn.h>

#include "model_config.h"

namespace tessel::workers {

// Keys and values of one attention layer. The buffers are allocated once, at the
// first use, for the whole context ([B, heads, context, head_dim]); each step
// copies its new positions in place, so decoding allocates no growing tensors.
// Positions [0, length) hold data.
struct LayerCache {
  torch::Tensor k;
  torch::Tensor v;
  int64_t length = 0;
};
using KvCache = std::vector<LayerCache>;  // one entry per layer
int64_t cached_length(const KvCache& cache);

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, LayerCache* cache);
  // One new position for each of B sequences (x [B, C], returns [B, C]); sequence
  // b attends over its own cache (*caches[b]), which may differ in length.
  torch::Tensor forward_step(const torch::Tensor& x, const std::vector<LayerCache*>& caches);

  torch::nn::Linear qkv{nullptr};
  torch::nn::Linear proj{nullptr};
  torch::ScalarType dtype = torch::kFloat;  // of the products; see GptImpl::set_compute_dtype

 private:
  // Appends T new positions [B, H, T, hd] to the cache; returns the keys and
  // values of every cached position (views of the cache's buffers).
  std::pair<torch::Tensor, torch::Tensor> append(LayerCache& cache, const torch::Tensor& k,
                                                 const torch::Tensor& v) const;

  int64_t heads_;
  int64_t head_dim_;
  int64_t context_;
  torch::Tensor future_mask_;  // [context, context] bool, true above the diagonal
};
TORCH_MODULE(CausalSelfAttention);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& config);
  torch::Tensor forward(torch::Tensor x, LayerCache* cache);
  // A decoding step: x [B, C] (see CausalSelfAttentionImpl::forward_step).
  torch::Tensor forward_step(torch::Tensor x, const std::vector<LayerCache*>& caches);

  torch::nn::LayerNorm ln1{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::LayerNorm ln2{nullptr};
  torch::nn::Linear fc{nullptr};
  torch::nn::Linear fc_proj{nullptr};
  torch::ScalarType dtype = torch::kFloat;  // of the products; see GptImpl::set_compute_dtype
};
TORCH_MODULE(Block);

class GptImpl : public torch::nn::Module {
 public:
  // Initialises parameters GPT-2 style from a generator seeded with `seed`
  // (not torch's global generator), so construction is deterministic and
  // safe to run concurrently in several threads.
  GptImpl(const ModelConfig& config, uint64_t seed);

  torch::Tensor forward(const torch::Tensor& tokens);
  torch::Tensor forward_cached(const torch::Tensor& tokens, KvCache& cache);
  // A decoding step of B sequences at once: tokens [B, 1], one cache per
  // sequence (each with cached length + 1 <= context), logits [B, 1, vocab].
  // The linear layers run once over the batch; attention runs per sequence,
  // over that sequence's cache only, so no padding or mask is needed. Single-
  // sequence generation decodes with it too (B = 1): activations stay 2-D, which
  // saves the reshapes a [B, T, C] path dispatches around every layer.
  torch::Tensor forward_step(const torch::Tensor& tokens, const std::vector<KvCache*>& caches);
  KvCache empty_cache() const;

  // kFloat (the default) or kBFloat16: the dtype of the matrix products (see
  // the top of this file). The KV cache then holds that dtype too.
  void set_compute_dtype(torch::ScalarType dtype);
  torch::ScalarType compute_dtype() const { return dtype_; }
  // For inference: stores the weights the products read (the linear layers and
  // the token embedding) in the compute dtype, cast once rather than at every
  // step. Layer norms and the position embedding stay fp32. Not for training:
  // the optimizer keeps fp32 parameters.
  void cast_product_weights();

  const ModelConfig& config() const { return config_; }

  torch::nn::Embedding tok_emb{nullptr};
  torch::nn::Embedding pos_emb{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear head{nullptr};  // null when config.tied_head

 private:
  torch::Tensor run(const torch::Tensor& tokens, KvCache* cache);
  ModelConfig config_;
  torch::ScalarType dtype_ = torch::kFloat;
};
TORCH_MODULE(Gpt);

// Mean next-token cross-entropy of logits [B, T, V] against targets [B, T], in fp32.
torch::Tensor language_model_loss(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace tessel::workers
