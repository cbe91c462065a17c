// ModelConfig: the architecture of the byte-level decoder-only transformer.
// Plain data; stored in every checkpoint so tessel-infer needs no
// architecture flags. No LibTorch here.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct ModelConfig {
  int64_t vocab = 256;  // byte-level tokens; fixed
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t dim = 64;
  int64_t context = 64;
  bool tied_head = true;  // output head shares the token embedding matrix
};

// Checks ranges and divisibility. The error names the CLI flag at fault,
// e.g. "--dim 65 is not divisible by --heads 4".
Status validate(const ModelConfig& config);

nlohmann::json to_json(const ModelConfig& config);
// Parses and validates; unknown keys are ignored, missing keys are errors.
Result<ModelConfig> model_config_from_json(const nlohmann::json& j);

}  // namespace tessel::workers
