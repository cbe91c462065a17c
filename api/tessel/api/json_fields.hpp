#pragma once
// FieldReader: strict reading of a JSON object into typed fields. It records the
// first problem (wrong type, out of range, too long, unknown field) with the
// field's dotted path, so a REST handler can answer 400 naming the field.
// Unknown fields are errors: call allow() for fields read by other means.

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace tessel::api {

struct FieldError {
  std::string field;    // Dotted path, e.g. "spec.devices".
  std::string message;  // Includes the field: "devices: must be one of 0, 1, 2, 4, 8".
};

class FieldReader {
 public:
  // `prefix` is prepended to field names in messages ("" for top level).
  FieldReader(const nlohmann::json& object, std::string prefix) : j_(object), prefix_(std::move(prefix)) {}

  bool has(const std::string& key);  // Marks the key as known.
  void allow(const std::string& key) { known_.insert(key); }

  void required_string(const std::string& key, std::string& out, size_t max_len);
  void optional_string(const std::string& key, std::string& out, size_t max_len);
  void optional_string(const std::string& key, std::optional<std::string>& out, size_t max_len);
  void required_int(const std::string& key, int& out, int64_t min, int64_t max);
  void optional_int(const std::string& key, int& out, int64_t min, int64_t max);
  void optional_int(const std::string& key, std::optional<int64_t>& out, int64_t min, int64_t max);
  void nullable_int(const std::string& key, std::optional<int64_t>& out);
  void optional_bool(const std::string& key, bool& out);

  // Records an error for `key` unless one is already recorded.
  void fail(const std::string& key, const std::string& message);

  // The first error, including unknown fields; nullopt when all is well.
  std::optional<std::string> finish();
  std::optional<FieldError> finish_field();

  std::string path(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

 private:
  const nlohmann::json& j_;
  std::string prefix_;
  std::set<std::string> known_;
  std::optional<FieldError> error_;
};

}  // namespace tessel::api
