#include "model_config.h"

namespace tessel::workers {

Status validate(const ModelConfig& c) {
  if (c.vocab != 256) return Error{"vocab must be 256 (byte-level), got " + std::to_string(c.vocab)};
  if (c.layers < 1 || c.layers > 256) return Error{"--layers must be in [1, 256], got " + std::to_string(c.layers)};
  if (c.heads < 1 || c.heads > 1024) return Error{"--heads must be in [1, 1024], got " + std::to_string(c.heads)};
  if (c.dim < 1 || c.dim > 65536) return Error{"--dim must be in [1, 65536], got " + std::to_string(c.dim)};
  if (c.dim % c.heads != 0)
    return Error{"--dim " + std::to_string(c.dim) + " is not divisible by --heads " + std::to_string(c.heads)};
  if (c.context < 2 || c.context > 1 << 20)
    return Error{"--context must be in [2, 1048576], got " + std::to_string(c.context)};
  return {};
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"vocab", c.vocab}, {"layers", c.layers},   {"heads", c.heads},
          {"dim", c.dim},     {"context", c.context}, {"tied_head", c.tied_head}};
}

Result<ModelConfig> model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error{"model config is not a JSON object"};
  ModelConfig c;
  try {
    c.vocab = j.at("vocab").get<int64_t>();
    c.layers = j.at("layers").get<int64_t>();
    c.heads = j.at("heads").get<int64_t>();
    c.dim = j.at("dim").get<int64_t>();
    c.context = j.at("context").get<int64_t>();
    c.tied_head = j.at("tied_head").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("model config: ") + e.what()};
  }
  if (auto s = validate(c); !s) return s.error().context("model config");
  return c;
}

}  // namespace tessel::workers
