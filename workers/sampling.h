// Sampling parameters and the pure token choice made at each decoding step.
// No LibTorch here: logits arrive as plain floats so the choice is testable
// and identical on every device.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct SamplingParams {
  int64_t max_new_tokens = 64;
  double temperature = 0.0;  // 0: greedy (argmax)
  int64_t top_k = 0;         // 0: no top-k filter
  uint64_t seed = 0;         // seeds the sampler; unused when greedy
  double top_p = 1.0;        // nucleus: the fewest likeliest bytes whose mass reaches top_p
};

// An invalid_argument Error whose `field` names the parameter (request
// spelling: "max_new_tokens", ...) and whose message says what is wrong with
// it ("must be in [0, 256]"); field_message() joins the two.
Status validate(const SamplingParams& params);

// "top_k must be in [0, 256]": the error's field (when it has one), a space,
// then its message. For errors from validate() and parse_generate_request().
std::string field_message(const Error& error);

// Greedy when temperature == 0 (lowest index wins ties), otherwise samples
// from softmax(logits / temperature) restricted to the top_k largest logits,
// then to the fewest of those whose probabilities sum to at least top_p.
// `logits` must be non-empty and finite.
int choose_token(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng);

}  // namespace tessel::workers
