#include "model_config.h"

namespace tessel::workers {

Status validate(const ModelConfig& c) {
  if (c.vocab != 256) return Error::invalid("vocab must be 256 (byte-level), got " + std::to_string(c.vocab), "vocab");
  if (c.layers < 1 || c.layers > 256)
    return Error::invalid("--layers must be in [1, 256], got " + std::to_string(c.layers), "layers");
  if (c.heads < 1 || c.heads > 1024)
    return Error::invalid("--heads must be in [1, 1024], got " + std::to_string(c.heads), "heads");
  if (c.dim < 1 || c.dim > 65536)
    return Error::invalid("--dim must be in [1, 65536], got " + std::to_string(c.dim), "dim");
  if (c.dim % c.heads != 0)
    return Error::invalid("--dim " + std::to_string(c.dim) + " is not divisible by --heads " + std::to_string(c.heads),
                          "dim");
  if (c.context < 2 || c.context > 1 << 20)
    return Error::invalid("--context must be in [2, 1048576], got " + std::to_string(c.context), "context");
  return ok_status();
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"vocab", c.vocab}, {"layers", c.layers},   {"heads", c.heads},
          {"dim", c.dim},     {"context", c.context}, {"tied_head", c.tied_head}};
}

Result<ModelConfig> model_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error::invalid("model config is not a JSON object");
  ModelConfig c;
  try {
    c.vocab = j.at("vocab").get<int64_t>();
    c.layers = j.at("layers").get<int64_t>();
    c.heads = j.at("heads").get<int64_t>();
    c.dim = j.at("dim").get<int64_t>();
    c.context = j.at("context").get<int64_t>();
    c.tied_head = j.at("tied_head").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return Error::invalid(std::string("model config: ") + e.what());
  }
  if (auto s = validate(c); !s) return s.error().wrap("model config");
  return c;
}

}  // namespace tessel::workers
