// Parsing of one generation request: a JSON object {"prompt": str,
// "max_new_tokens"?: int, "temperature"?: num, "top_k"?: int, "seed"?: int}.
// Shared by tessel-infer's batch lines and its POST /v1/generate body.
// Absent fields take the caller's defaults. No LibTorch here.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sampling.h"

namespace tessel::workers {

struct GenerateRequest {
  std::string prompt;
  SamplingParams params;
};

// On failure returns the offending field ("prompt", "top_k", ... or "" for
// the body itself) and why; `out` is then unspecified.
std::optional<FieldError> parse_generate_request(const nlohmann::json& body, const SamplingParams& defaults,
                                                 GenerateRequest& out);

// JSON dump that replaces invalid UTF-8 (completions are raw bytes).
std::string dump_lossy(const nlohmann::json& j);

}  // namespace tessel::workers
