#include "gpt.h"

#include <cmath>
#include <limits>
#include <tuple>

#include <ATen/CPUGeneratorImpl.h>

namespace tessel::workers {

int64_t cached_length(const KvCache& cache) { return cache.empty() ? 0 : cache.front().length; }

namespace {

// Up to this many rows, a decoding step's linear layer is one matrix-vector product
// (sgemv) per row rather than one matrix product (sgemm): OpenBLAS's sgemm copies the
// whole weight matrix into its packed layout on every call, which for a single row costs
// 4.7-6x what sgemv does reading the weights once (measured from 128x128 to 2048x512);
// at 4 rows the two are about even, from 8 rows on sgemm wins.
constexpr int64_t kMatVecRows = 4;

// `t` in `dtype`: the input of a matrix product in the compute dtype (no copy when it is).
torch::Tensor cast_to(const torch::Tensor& t, torch::ScalarType dtype) {
  return !t.defined() || t.scalar_type() == dtype ? t : t.to(dtype);
}

// A linear layer computed in `dtype` (its output too).
torch::Tensor linear_as(const torch::Tensor& x, const torch::nn::Linear& layer, torch::ScalarType dtype) {
  return torch::nn::functional::linear(cast_to(x, dtype), cast_to(layer->weight, dtype), cast_to(layer->bias, dtype));
}

// x [B, in] -> x weight^T + bias [B, out] in `dtype`; weight [out, in], bias [out] or undefined.
torch::Tensor step_linear(const torch::Tensor& x_in, const torch::Tensor& weight_in, const torch::Tensor& bias_in,
                          torch::ScalarType dtype) {
  const auto x = cast_to(x_in, dtype), weight = cast_to(weight_in, dtype), bias = cast_to(bias_in, dtype);
  const int64_t rows = x.size(0);
  // The matrix-vector path is for fp32 (OpenBLAS sgemv); bf16 products go to
  // oneDNN through linear() at every row count (LibTorch 1.13's bf16 mv is slower).
  if (rows > kMatVecRows || dtype != torch::kFloat) return torch::nn::functional::linear(x, weight, bias);
  auto out = torch::empty({rows, weight.size(0)}, x.options());
  for (int64_t r = 0; r < rows; ++r) {
    auto row = out.select(0, r);
    if (bias.defined())
      at::addmv_out(row, bias, weight, x.select(0, r));
    else
      at::mv_out(row, weight, x.select(0, r));
  }
  return out;
}

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& c)
    : heads_(c.heads), head_dim_(c.dim / c.heads), context_(c.context) {
  qkv = register_module("qkv", torch::nn::Linear(c.dim, 3 * c.dim));
  proj = register_module("proj", torch::nn::Linear(c.dim, c.dim));
  future_mask_ = register_buffer("future_mask", torch::ones({c.context, c.context}, torch::kBool).triu(1));
}

std::pair<torch::Tensor, torch::Tensor> CausalSelfAttentionImpl::append(LayerCache& cache, const torch::Tensor& k,
                                                                        const torch::Tensor& v) const {
  const int64_t T = k.size(2);
  TORCH_CHECK(cache.length + T <= context_, "sequence of ", cache.length + T, " tokens exceeds context ", context_);
  if (!cache.k.defined()) {
    cache.k = torch::empty({k.size(0), heads_, context_, head_dim_}, k.options());
    cache.v = torch::empty({v.size(0), heads_, context_, head_dim_}, v.options());
  }
  cache.k.narrow(2, cache.length, T).copy_(k);
  cache.v.narrow(2, cache.length, T).copy_(v);
  cache.length += T;
  return {cache.k.narrow(2, 0, cache.length), cache.v.narrow(2, 0, cache.length)};
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, LayerCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  auto parts = linear_as(x, qkv, dtype).view({B, T, 3, heads_, head_dim_}).permute({2, 0, 3, 1, 4});
  torch::Tensor q = parts[0], k = parts[1], v = parts[2];  // [B, H, T, hd]
  int64_t past = 0;
  if (cache != nullptr) {
    past = cache->length;
    std::tie(k, v) = append(*cache, k, v);
  }
  const int64_t total = past + T;
  // Scale the queries ([.., T, hd]) rather than the scores ([.., T, total]): fewer
  // elements; and mask the scores in place (matmul's backward does not need them).
  auto att = torch::matmul(q * (1.0 / std::sqrt(static_cast<double>(head_dim_))), k.transpose(-2, -1));
  if (T > 1)
    att.masked_fill_(future_mask_.slice(0, past, total).slice(1, 0, total), -std::numeric_limits<float>::infinity());
  // Softmax in fp32 whatever the product's dtype; its weights go back to that dtype.
  auto y = torch::matmul(cast_to(torch::softmax(att, -1, torch::kFloat), dtype), v);  // [B, H, T, hd]
  return linear_as(y.transpose(1, 2).reshape({B, T, C}), proj, dtype);
}

torch::Tensor CausalSelfAttentionImpl::forward_step(const torch::Tensor& x, const std::vector<LayerCache*>& caches) {
  // A decoding step is op-dispatch bound, not compute bound: x is [B, C], the linear
  // layers are single addmm calls, and attention is two bmm per sequence over its
  // cache, with no 4-D reshapes around them.
  const int64_t B = x.size(0), C = x.size(1);
  const auto rows = step_linear(x, qkv->weight, qkv->bias, dtype).view({B, 3, heads_, head_dim_});  // [B, q|k|v, H, hd]
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  std::vector<torch::Tensor> ys;
  ys.reserve(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    LayerCache& cache = *caches[static_cast<size_t>(b)];
    const auto row = rows.select(0, b);  // [3, H, hd]
    // Keys and values [H, 1, hd] into the cache; every cached position [H, L, hd].
    const std::vector<int64_t> one_position = {1, heads_, 1, head_dim_};
    auto [k, v] = append(cache, row.select(0, 1).view(one_position), row.select(0, 2).view(one_position));
    k = k.select(0, 0);
    v = v.select(0, 0);
    const auto q = row.select(0, 0).view({heads_, 1, head_dim_}) * scale;
    // One query at the newest position: it may see every cached key, no mask.
    const auto probs = cast_to(torch::softmax(torch::bmm(q, k.transpose(1, 2)), -1, torch::kFloat), dtype);
    ys.push_back(torch::bmm(probs, v).view({1, C}));
  }
  return step_linear(B == 1 ? ys.front() : torch::cat(ys, 0), proj->weight, proj->bias, dtype);  // [B, C]
}

BlockImpl::BlockImpl(const ModelConfig& c) {
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  attn = register_module("attn", CausalSelfAttention(c));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  fc = register_module("fc", torch::nn::Linear(c.dim, 4 * c.dim));
  fc_proj = register_module("fc_proj", torch::nn::Linear(4 * c.dim, c.dim));
}

torch::Tensor BlockImpl::forward(torch::Tensor x, LayerCache* cache) {
  x = x + attn(ln1(x), cache);
  return x + linear_as(torch::gelu(linear_as(ln2(x), fc, dtype)), fc_proj, dtype);  // fp32 x: the sum is fp32
}

torch::Tensor BlockImpl::forward_step(torch::Tensor x, const std::vector<LayerCache*>& caches) {
  x = x + attn->forward_step(ln1(x), caches);  // [B, C] throughout.
  return x + step_linear(torch::gelu(step_linear(ln2(x), fc->weight, fc->bias, dtype)), fc_proj->weight, fc_proj->bias,
                         dtype);
}

GptImpl::GptImpl(const ModelConfig& c, uint64_t seed) : config_(c) {
  tok_emb = register_module("tok_emb", torch::nn::Embedding(c.vocab, c.dim));
  pos_emb = register_module("pos_emb", torch::nn::Embedding(c.context, c.dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.layers; ++i) blocks->push_back(Block(c));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dim})));
  if (!c.tied_head)
    head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(c.dim, c.vocab).bias(false)));

  // GPT-2 initialisation from a private generator.
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.layers));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (name.find("ln") != std::string::npos) {
      p.fill_(is_bias ? 0.0 : 1.0);
    } else if (is_bias) {
      p.zero_();
    } else {
      const bool residual = name.find("proj.weight") != std::string::npos;
      p.normal_(0.0, residual ? residual_std : 0.02, gen);
    }
  }
}

KvCache GptImpl::empty_cache() const { return KvCache(static_cast<size_t>(config_.layers)); }

void GptImpl::set_compute_dtype(torch::ScalarType dtype) {
  TORCH_CHECK(dtype == torch::kFloat || dtype == torch::kBFloat16, "compute dtype must be float or bfloat16, not ",
              dtype);
  dtype_ = dtype;
  for (size_t i = 0; i < blocks->size(); ++i) {
    const auto block = blocks->ptr<BlockImpl>(i);
    block->dtype = dtype;
    block->attn->dtype = dtype;
  }
}

void GptImpl::cast_product_weights() {
  torch::NoGradGuard no_grad;
  tok_emb->to(dtype_);  // also the tied head
  if (head) head->to(dtype_);
  for (size_t i = 0; i < blocks->size(); ++i) {
    const auto block = blocks->ptr<BlockImpl>(i);
    for (auto* layer : {&block->attn->qkv, &block->attn->proj, &block->fc, &block->fc_proj}) (*layer)->to(dtype_);
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) { return run(tokens, nullptr); }

torch::Tensor GptImpl::forward_cached(const torch::Tensor& tokens, KvCache& cache) {
  TORCH_CHECK(static_cast<int64_t>(cache.size()) == config_.layers, "KvCache has wrong layer count");
  return run(tokens, &cache);
}

torch::Tensor GptImpl::forward_step(const torch::Tensor& tokens, const std::vector<KvCache*>& caches) {
  const auto B = static_cast<size_t>(tokens.size(0));
  TORCH_CHECK(tokens.size(1) == 1 && caches.size() == B, "forward_step: tokens [B, 1] and B caches");
  std::vector<int64_t> positions(B);
  for (size_t b = 0; b < B; ++b) {
    TORCH_CHECK(static_cast<int64_t>(caches[b]->size()) == config_.layers, "KvCache has wrong layer count");
    positions[b] = cached_length(*caches[b]);
    TORCH_CHECK(positions[b] < config_.context, "sequence of ", positions[b] + 1, " tokens exceeds context ",
                config_.context);
  }
  // Rows of the embedding tables; activations stay [B, C] until the logits. The
  // residual stream is fp32 (a bf16 token row plus the fp32 position row is fp32).
  auto pos = torch::tensor(positions, torch::kLong).to(tokens.device());
  auto x = tok_emb->weight.index_select(0, tokens.view({-1})) + pos_emb->weight.index_select(0, pos);
  std::vector<LayerCache*> layer(B);
  for (size_t i = 0; i < blocks->size(); ++i) {
    for (size_t b = 0; b < B; ++b) layer[b] = &(*caches[b])[i];
    x = blocks->ptr<BlockImpl>(i)->forward_step(x, layer);
  }
  x = ln_f(x);
  auto logits = step_linear(x, config_.tied_head ? tok_emb->weight : head->weight, {}, dtype_);
  return cast_to(logits, torch::kFloat).unsqueeze(1);  // [B, 1, vocab]
}

torch::Tensor GptImpl::run(const torch::Tensor& tokens, KvCache* cache) {
  const int64_t past = cache ? cached_length(*cache) : 0;
  const int64_t T = tokens.size(1);
  TORCH_CHECK(past + T <= config_.context, "sequence of ", past + T, " tokens exceeds context ", config_.context);
  auto pos = torch::arange(past, past + T, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  auto x = tok_emb(tokens) + pos_emb(pos);
  for (size_t i = 0; i < blocks->size(); ++i) {
    x = blocks->ptr<BlockImpl>(i)->forward(x, cache ? &(*cache)[i] : nullptr);
  }
  x = ln_f(x);
  if (config_.tied_head)
    return cast_to(torch::matmul(cast_to(x, dtype_), cast_to(tok_emb->weight, dtype_).t()), torch::kFloat);
  return cast_to(linear_as(x, head, dtype_), torch::kFloat);
}

torch::Tensor language_model_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(cast_to(logits, torch::kFloat).reshape({-1, logits.size(-1)}),
                                              targets.reshape({-1}));
}

}  // namespace tessel::workers
