#include "tessel/api/json_fields.hpp"

#include <algorithm>

namespace tessel::api {

const nlohmann::json* FieldReader::lookup(std::string_view key) {
  if (!j_.is_object()) return nullptr;
  const auto it = j_.find(key);
  if (it == j_.end()) return nullptr;
  const std::string* name = &it.key();
  if (std::find(known_.begin(), known_.end(), name) == known_.end()) known_.push_back(name);
  return &*it;
}

const nlohmann::json* FieldReader::present(std::string_view key) {
  const nlohmann::json* v = lookup(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string FieldReader::path(std::string_view key) const {
  return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

void FieldReader::fail(std::string_view key, const std::string& message) {
  if (!error_) error_ = FieldError{path(key), path(key) + ": " + message};
}

void FieldReader::required_string(std::string_view key, std::string& out, size_t max_len) {
  if (!has(key)) return fail(key, "is required");
  optional_string(key, out, max_len);
}

void FieldReader::optional_string(std::string_view key, std::string& out, size_t max_len) {
  const nlohmann::json* v = present(key);
  if (!v) return;
  if (!v->is_string()) return fail(key, "must be a string");
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) return fail(key, "longer than " + std::to_string(max_len) + " characters");
  out = s;
}

void FieldReader::optional_string(std::string_view key, std::optional<std::string>& out, size_t max_len) {
  if (!has(key)) return;
  std::string s;
  optional_string(key, s, max_len);
  out = std::move(s);
}

void FieldReader::required_int(std::string_view key, int& out, int64_t min, int64_t max) {
  if (!has(key)) return fail(key, "is required");
  optional_int(key, out, min, max);
}

void FieldReader::optional_int(std::string_view key, int& out, int64_t min, int64_t max) {
  std::optional<int64_t> v;
  optional_int(key, v, min, max);
  if (v) out = static_cast<int>(*v);
}

void FieldReader::optional_int(std::string_view key, std::optional<int64_t>& out, int64_t min, int64_t max) {
  const nlohmann::json* v = present(key);
  if (!v) return;
  if (!v->is_number_integer()) return fail(key, "must be an integer");
  int64_t n =
      v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v->get<int64_t>();
  if (n < min || n > max) return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  out = n;
}

void FieldReader::nullable_int(std::string_view key, std::optional<int64_t>& out) {
  optional_int(key, out, INT64_MIN, INT64_MAX);
}

void FieldReader::optional_bool(std::string_view key, bool& out) {
  const nlohmann::json* v = present(key);
  if (!v) return;
  if (!v->is_boolean()) return fail(key, "must be true or false");
  out = v->get<bool>();
}

std::optional<FieldError> FieldReader::finish_field() {
  // Every member was asked for when as many distinct keys were: no walk then.
  if (!error_ && j_.is_object() && known_.size() < j_.size()) {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find(known_.begin(), known_.end(), &it.key()) == known_.end()) {
        fail(it.key(), "unknown field");
        break;
      }
    }
  }
  return error_;
}

std::optional<std::string> FieldReader::finish() {
  auto e = finish_field();
  if (!e) return std::nullopt;
  return e->message;
}

}  // namespace tessel::api
