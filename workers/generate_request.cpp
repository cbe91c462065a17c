#include "generate_request.h"

namespace tessel::workers {
namespace {

constexpr size_t kMaxPromptBytes = 1 << 20;

std::optional<FieldError> read_int(const nlohmann::json& body, const char* field, int64_t& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return FieldError{field, "must be an integer"};
  out = it->get<int64_t>();
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> parse_generate_request(const nlohmann::json& body, const SamplingParams& defaults,
                                                 GenerateRequest& out) {
  if (!body.is_object()) return FieldError{"", "request must be a JSON object"};
  out.params = defaults;
  auto prompt = body.find("prompt");
  if (prompt == body.end()) return FieldError{"prompt", "is required"};
  if (!prompt->is_string()) return FieldError{"prompt", "must be a string"};
  out.prompt = prompt->get<std::string>();
  if (out.prompt.empty()) return FieldError{"prompt", "must not be empty"};
  if (out.prompt.size() > kMaxPromptBytes) return FieldError{"prompt", "is longer than 1 MiB"};
  if (auto e = read_int(body, "max_new_tokens", out.params.max_new_tokens)) return e;
  if (auto e = read_int(body, "top_k", out.params.top_k)) return e;
  if (auto it = body.find("temperature"); it != body.end() && !it->is_null()) {
    if (!it->is_number()) return FieldError{"temperature", "must be a number"};
    out.params.temperature = it->get<double>();
  }
  int64_t seed = static_cast<int64_t>(out.params.seed);
  if (auto e = read_int(body, "seed", seed)) return e;
  if (seed < 0) return FieldError{"seed", "must be >= 0"};
  out.params.seed = static_cast<uint64_t>(seed);
  return validate(out.params);
}

std::string dump_lossy(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessel::workers
