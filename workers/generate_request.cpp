#include "generate_request.h"

namespace tessel::workers {
namespace {

constexpr size_t kMaxPromptBytes = 1 << 20;

Status read_int(const nlohmann::json& body, const char* field, int64_t& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return ok_status();
  if (!it->is_number_integer()) return Error::invalid("must be an integer", field);
  out = it->get<int64_t>();
  return ok_status();
}

}  // namespace

Result<GenerateRequest> parse_generate_request(const nlohmann::json& body, const SamplingParams& defaults) {
  if (!body.is_object()) return Error::invalid("request must be a JSON object");
  GenerateRequest out;
  out.params = defaults;
  auto prompt = body.find("prompt");
  if (prompt == body.end()) return Error::invalid("is required", "prompt");
  if (!prompt->is_string()) return Error::invalid("must be a string", "prompt");
  out.prompt = prompt->get<std::string>();
  if (out.prompt.empty()) return Error::invalid("must not be empty", "prompt");
  if (out.prompt.size() > kMaxPromptBytes) return Error::invalid("is longer than 1 MiB", "prompt");
  if (auto s = read_int(body, "max_new_tokens", out.params.max_new_tokens); !s) return s.error();
  if (auto s = read_int(body, "top_k", out.params.top_k); !s) return s.error();
  if (auto it = body.find("temperature"); it != body.end() && !it->is_null()) {
    if (!it->is_number()) return Error::invalid("must be a number", "temperature");
    out.params.temperature = it->get<double>();
  }
  int64_t seed = static_cast<int64_t>(out.params.seed);
  if (auto s = read_int(body, "seed", seed); !s) return s.error();
  if (seed < 0) return Error::invalid("must be >= 0", "seed");
  out.params.seed = static_cast<uint64_t>(seed);
  if (auto s = validate(out.params); !s) return s.error();
  return out;
}

std::string dump_lossy(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessel::workers
