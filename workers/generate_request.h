// Parsing of one generation request: a JSON object {"prompt": str,
// "max_new_tokens"?: int, "temperature"?: num, "top_k"?: int, "seed"?: int}.
// Shared by tessel-infer's batch lines and its POST /v1/generate body.
// Absent fields take the caller's defaults. No LibTorch here.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sampling.h"
#include "tessel/base/result.hpp"

namespace tessel::workers {

struct GenerateRequest {
  std::string prompt;
  SamplingParams params;
};

// On failure an invalid_argument Error whose field names the offending
// request field ("prompt", "top_k", ... or "" for the body itself) and whose
// message says why (field_message() joins them).
Result<GenerateRequest> parse_generate_request(const nlohmann::json& body, const SamplingParams& defaults);

// JSON dump that replaces invalid UTF-8 (completions are raw bytes).
std::string dump_lossy(const nlohmann::json& j);

}  // namespace tessel::workers
