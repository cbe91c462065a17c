// Autoregressive decoding for Gpt, with or without a key-value cache.
//
// Window policy (both modes, so they produce the same tokens): the model
// sees tokens [start, len). Initially start = max(0, len - context). When a
// new token would make the window longer than `context`, start jumps to
// len - context/2; the cached mode then re-fills its cache from the window,
// so it decodes one token per forward except at those jumps.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gpt.h"
#include "sampling.h"

namespace tessel::workers {

enum class DecodeMode { kKvCache, kFullRecompute };

// Called with each new token as soon as it is chosen; returning false ends
// generation there (that token is kept).
using TokenSink = std::function<bool(uint8_t)>;

// Returns only the new tokens (at most params.max_new_tokens). `prompt` must
// be non-empty. Runs under inference mode on the model's device.
std::vector<uint8_t> generate_tokens(Gpt& model, const std::vector<uint8_t>& prompt, const SamplingParams& params,
                                     DecodeMode mode, const TokenSink& on_token = {});

}  // namespace tessel::workers
