#include "tessel/api/json_fields.hpp"

namespace tessel::api {

bool FieldReader::has(const std::string& key) {
  known_.insert(key);
  return j_.contains(key) && !j_[key].is_null();
}

void FieldReader::fail(const std::string& key, const std::string& message) {
  if (!error_) error_ = FieldError{path(key), path(key) + ": " + message};
}

void FieldReader::required_string(const std::string& key, std::string& out, size_t max_len) {
  if (!has(key)) return fail(key, "is required");
  optional_string(key, out, max_len);
}

void FieldReader::optional_string(const std::string& key, std::string& out, size_t max_len) {
  if (!has(key)) return;
  const auto& v = j_[key];
  if (!v.is_string()) return fail(key, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_len) return fail(key, "longer than " + std::to_string(max_len) + " characters");
  out = s;
}

void FieldReader::optional_string(const std::string& key, std::optional<std::string>& out, size_t max_len) {
  if (!has(key)) return;
  std::string s;
  optional_string(key, s, max_len);
  out = s;
}

void FieldReader::required_int(const std::string& key, int& out, int64_t min, int64_t max) {
  if (!has(key)) return fail(key, "is required");
  optional_int(key, out, min, max);
}

void FieldReader::optional_int(const std::string& key, int& out, int64_t min, int64_t max) {
  std::optional<int64_t> v;
  optional_int(key, v, min, max);
  if (v) out = static_cast<int>(*v);
}

void FieldReader::optional_int(const std::string& key, std::optional<int64_t>& out, int64_t min, int64_t max) {
  if (!has(key)) return;
  const auto& v = j_[key];
  if (!v.is_number_integer()) return fail(key, "must be an integer");
  int64_t n =
      v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (n < min || n > max) return fail(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  out = n;
}

void FieldReader::nullable_int(const std::string& key, std::optional<int64_t>& out) {
  optional_int(key, out, INT64_MIN, INT64_MAX);
}

void FieldReader::optional_bool(const std::string& key, bool& out) {
  if (!has(key)) return;
  if (!j_[key].is_boolean()) return fail(key, "must be true or false");
  out = j_[key].get<bool>();
}

std::optional<FieldError> FieldReader::finish_field() {
  if (!error_ && j_.is_object()) {
    for (const auto& [k, _] : j_.items()) {
      if (!known_.count(k)) {
        fail(k, "unknown field");
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
