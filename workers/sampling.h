// Sampling parameters and the pure token choice made at each decoding step.
// No LibTorch here: logits arrive as plain floats so the choice is testable
// and identical on every device.
#pragma once

#include <cstdint>
#include <random>
#include <span>

#include "result.h"

namespace tessel::workers {

struct SamplingParams {
  int64_t max_new_tokens = 64;
  double temperature = 0.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: no top-k filter
  uint64_t seed = 0;         // seeds the sampler; unused when greedy
};

// Error names the field (request/CLI spelling: "max_new_tokens", ...).
struct FieldError {
  std::string field;
  std::string message;
};
std::optional<FieldError> validate(const SamplingParams& params);

// Greedy when temperature == 0 (lowest index wins ties), otherwise samples
// from softmax(logits / temperature) restricted to the top_k largest logits.
// `logits` must be non-empty and finite.
int choose_token(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng);

}  // namespace tessel::workers
