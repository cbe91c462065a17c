#include "openai_api.h"

#include <algorithm>
#include <set>

namespace tessel::workers {
namespace {

constexpr size_t kMaxPromptBytes = 1 << 20;
constexpr size_t kMaxPrompts = 64;
constexpr size_t kMaxStops = 4;  // as OpenAI

using nlohmann::json;

// Fields OpenAI defines that this server accepts only at the value that
// changes nothing (null, or the value shown).
bool neutral(const std::string& key, const json& value) {
  if (value.is_null()) return true;
  if (key == "user") return value.is_string();
  if (key == "presence_penalty" || key == "frequency_penalty") return value.is_number() && value.get<double>() == 0;
  if (key == "logprobs" || key == "echo") return value.is_boolean() && !value.get<bool>();
  if (key == "best_of") return value.is_number_integer() && value.get<int64_t>() == 1;
  if (key == "stream_options") return value.is_object();
  return false;
}

Status check_fields(const json& body, const std::set<std::string>& known) {
  static const std::set<std::string> kNeutralFields = {
      "user", "presence_penalty", "frequency_penalty", "logprobs", "best_of", "echo", "stream_options"};
  for (const auto& [key, value] : body.items()) {
    if (known.contains(key)) continue;
    if (kNeutralFields.contains(key)) {
      if (neutral(key, value)) continue;
      return Error::invalid("is not supported by this server (only its neutral value is accepted)", key);
    }
    return Error::invalid("is not a recognized request argument", key);
  }
  return ok_status();
}

Status read_int(const json& body, const char* field, int64_t& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return ok_status();
  if (!it->is_number_integer()) return Error::invalid("must be an integer", field);
  out = it->get<int64_t>();
  return ok_status();
}

Status read_number(const json& body, const char* field, double& out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return ok_status();
  if (!it->is_number()) return Error::invalid("must be a number", field);
  out = it->get<double>();
  return ok_status();
}

// The fields both endpoints share: model, sampling, stop, n, stream.
Status read_common(const json& body, OpenAiRequest& out) {
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return Error::invalid("must be a string", "model");
    out.model = it->get<std::string>();
  }
  if (auto s = read_number(body, "temperature", out.params.temperature); !s) return s;
  if (auto s = read_number(body, "top_p", out.params.top_p); !s) return s;
  if (auto s = read_int(body, "top_k", out.params.top_k); !s) return s;
  if (out.params.top_k == -1) out.params.top_k = 0;  // vLLM's spelling of "no top-k"
  int64_t seed = static_cast<int64_t>(out.params.seed);
  if (auto s = read_int(body, "seed", seed); !s) return s;
  if (seed < 0) return Error::invalid("must be >= 0", "seed");
  out.params.seed = static_cast<uint64_t>(seed);
  int64_t n = 1;
  if (auto s = read_int(body, "n", n); !s) return s;
  if (n != 1) return Error::invalid("must be 1 (one choice per prompt)", "n");
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return Error::invalid("must be a boolean", "stream");
    out.stream = it->get<bool>();
  }
  if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      out.stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      for (const auto& s : *it) {
        if (!s.is_string()) return Error::invalid("must be a string or a list of strings", "stop");
        out.stop.push_back(s.get<std::string>());
      }
    } else {
      return Error::invalid("must be a string or a list of strings", "stop");
    }
    if (out.stop.size() > kMaxStops) return Error::invalid("has more than 4 sequences", "stop");
    if (std::any_of(out.stop.begin(), out.stop.end(), [](const std::string& s) { return s.empty(); }))
      return Error::invalid("must not contain an empty string", "stop");
  }
  if (auto s = validate(out.params); !s) {
    if (s.error().field == "max_new_tokens") return Error::invalid(s.error().message, "max_tokens");
    return s;
  }
  return ok_status();
}

Status check_prompt(const std::string& prompt, const char* field) {
  if (prompt.empty()) return Error::invalid("must not be empty", field);
  if (prompt.size() > kMaxPromptBytes) return Error::invalid("is longer than 1 MiB", field);
  return ok_status();
}

// Length of the longest suffix of `text` that is a proper prefix of `stop`.
size_t partial_stop(std::string_view text, std::string_view stop) {
  for (size_t len = std::min(text.size(), stop.size() - 1); len > 0; --len) {
    if (text.substr(text.size() - len) == stop.substr(0, len)) return len;
  }
  return 0;
}

// Bytes at the end of `text` that start a UTF-8 character not yet complete.
size_t incomplete_utf8(std::string_view text) {
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = 1;
    if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    return need > back ? back : 0;
  }
  return 0;
}

json usage(const OpenAiRequest& request, int64_t completion_tokens) {
  const int64_t prompt = prompt_tokens(request);
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt + completion_tokens}};
}

json finish(const Choice& c) { return c.finish_reason.empty() ? json(nullptr) : json(c.finish_reason); }

}  // namespace

Result<OpenAiRequest> parse_completion_request(const json& body, const SamplingParams& defaults) {
  if (!body.is_object()) return Error::invalid("request must be a JSON object");
  if (auto s = check_fields(
          body, {"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n", "stream"});
      !s)
    return s.error();
  OpenAiRequest out;
  out.params = defaults;
  auto prompt = body.find("prompt");
  if (prompt == body.end() || prompt->is_null()) return Error::invalid("is required", "prompt");
  if (prompt->is_string()) {
    out.prompts.push_back(prompt->get<std::string>());
  } else if (prompt->is_array() && !prompt->empty()) {
    if (prompt->size() > kMaxPrompts) return Error::invalid("has more than 64 prompts", "prompt");
    for (const auto& p : *prompt) {
      if (!p.is_string()) return Error::invalid("must be a string or a non-empty list of strings", "prompt");
      out.prompts.push_back(p.get<std::string>());
    }
  } else {
    return Error::invalid("must be a string or a non-empty list of strings", "prompt");
  }
  for (const auto& p : out.prompts)
    if (auto s = check_prompt(p, "prompt"); !s) return s.error();
  if (auto s = read_int(body, "max_tokens", out.params.max_new_tokens); !s) return s.error();
  if (auto s = read_common(body, out); !s) return s.error();
  return out;
}

Result<OpenAiRequest> parse_chat_request(const json& body, const SamplingParams& defaults) {
  if (!body.is_object()) return Error::invalid("request must be a JSON object");
  if (auto s = check_fields(body, {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
                                   "top_k", "seed", "stop", "n", "stream"});
      !s)
    return s.error();
  OpenAiRequest out;
  out.chat = true;
  out.params = defaults;
  auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null()) return Error::invalid("is required", "messages");
  if (!messages->is_array() || messages->empty()) return Error::invalid("must be a non-empty list", "messages");
  std::vector<ChatMessage> parsed;
  for (const auto& m : *messages) {
    if (!m.is_object()) return Error::invalid("must be a list of {role, content} objects", "messages");
    auto role = m.find("role");
    auto content = m.find("content");
    if (role == m.end() || !role->is_string()) return Error::invalid("role must be a string", "messages");
    const auto r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant")
      return Error::invalid("role must be system, user or assistant, got \"" + r + "\"", "messages");
    if (content == m.end() || !content->is_string()) return Error::invalid("content must be a string", "messages");
    parsed.push_back({r, content->get<std::string>()});
  }
  out.prompts.push_back(render_chat(parsed));
  if (auto s = check_prompt(out.prompts.front(), "messages"); !s) return s.error();
  if (auto s = read_int(body, "max_tokens", out.params.max_new_tokens); !s) return s.error();
  if (auto s = read_int(body, "max_completion_tokens", out.params.max_new_tokens); !s) return s.error();
  if (auto s = read_common(body, out); !s) return s.error();
  return out;
}

std::string render_chat(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "\n";
  return out + "<|assistant|>\n";
}

json openai_error(const Error& error, int status) {
  return {{"error",
           {{"message", error.field.empty() ? error.message : error.field + " " + error.message},
            {"type", status >= 400 && status < 500 ? "invalid_request_error" : "server_error"},
            {"param", error.field.empty() ? json(nullptr) : json(error.field)},
            {"code", to_string(error.code)}}}};
}

bool StopMatcher::push(char byte) {
  if (stopped_) return false;
  text_.push_back(byte);
  for (const auto& stop : stops_) {
    if (text_.size() >= stop.size() && text_.compare(text_.size() - stop.size(), stop.size(), stop) == 0) {
      text_.resize(text_.size() - stop.size());
      stopped_ = true;
      return false;
    }
  }
  return true;
}

std::string StopMatcher::take_ready() {
  size_t hold = 0;
  if (!stopped_) {
    const std::string_view unsent = std::string_view(text_).substr(sent_);
    for (const auto& stop : stops_) hold = std::max(hold, partial_stop(unsent, stop));
  }
  std::string_view ready = std::string_view(text_).substr(sent_, text_.size() - sent_ - hold);
  ready.remove_suffix(incomplete_utf8(ready));
  sent_ += ready.size();
  return std::string(ready);
}

std::string StopMatcher::take_rest() {
  std::string rest = text_.substr(sent_);
  sent_ = text_.size();
  return rest;
}

json completion_response(const OpenAiRequest& request, const std::string& id, int64_t created, const std::string& model,
                         const std::vector<Choice>& choices, int64_t completion_tokens) {
  json out_choices = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    if (request.chat) {
      out_choices.push_back({{"index", i},
                             {"message", {{"role", "assistant"}, {"content", choices[i].text}}},
                             {"logprobs", nullptr},
                             {"finish_reason", finish(choices[i])}});
    } else {
      out_choices.push_back(
          {{"index", i}, {"text", choices[i].text}, {"logprobs", nullptr}, {"finish_reason", finish(choices[i])}});
    }
  }
  return {{"id", id},
          {"object", request.chat ? "chat.completion" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", out_choices},
          {"usage", usage(request, completion_tokens)}};
}

json completion_chunk(const OpenAiRequest& request, const std::string& id, int64_t created, const std::string& model,
                      int64_t index, const Choice& piece, bool first) {
  json choice;
  if (request.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!piece.text.empty() || (first && piece.finish_reason.empty())) delta["content"] = piece.text;
    choice = {{"index", index}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish(piece)}};
  } else {
    choice = {{"index", index}, {"text", piece.text}, {"logprobs", nullptr}, {"finish_reason", finish(piece)}};
  }
  return {{"id", id},
          {"object", request.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({choice})}};
}

json models_response(const std::string& model, int64_t created, const std::string& precision) {
  json entry = {{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "tessel"}};
  if (!precision.empty()) entry["precision"] = precision;
  return {{"object", "list"}, {"data", json::array({entry})}};
}

int64_t prompt_tokens(const OpenAiRequest& request) {
  int64_t n = 0;
  for (const auto& p : request.prompts) n += static_cast<int64_t>(p.size());
  return n;
}

std::string sse_event(const json& data) {
  return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace tessel::workers
