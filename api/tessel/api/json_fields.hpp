#pragma once
// FieldReader: strict reading of a JSON object into typed fields. It records the
// first problem (wrong type, out of range, too long, unknown field) with the
// field's dotted path, so a REST handler can answer 400 naming the field.
// Unknown fields are errors: call allow() for fields read by other means.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  // It keeps a reference to the object: a temporary would be gone before the reads.
  FieldReader(nlohmann::json&& object, std::string prefix) = delete;

  // Whether the field is there and not null. Marks the key as known.
  bool has(std::string_view key) { return present(key) != nullptr; }
  void allow(std::string_view key) { (void)lookup(key); }

  void required_string(std::string_view key, std::string& out, size_t max_len);
  void optional_string(std::string_view key, std::string& out, size_t max_len);
  void optional_string(std::string_view key, std::optional<std::string>& out, size_t max_len);
  void required_int(std::string_view key, int& out, int64_t min, int64_t max);
  void optional_int(std::string_view key, int& out, int64_t min, int64_t max);
  void optional_int(std::string_view key, std::optional<int64_t>& out, int64_t min, int64_t max);
  void nullable_int(std::string_view key, std::optional<int64_t>& out);
  void optional_bool(std::string_view key, bool& out);

  // Records an error for `key` unless one is already recorded.
  void fail(std::string_view key, const std::string& message);

  // The first error, including unknown fields; nullopt when all is well.
  std::optional<std::string> finish();
  std::optional<FieldError> finish_field();

  std::string path(std::string_view key) const;

 private:
  // The member named `key`, marked as known; null when the object has none (or
  // `j_` is not an object).
  const nlohmann::json* lookup(std::string_view key);
  // lookup(), but null for a member whose value is null too.
  const nlohmann::json* present(std::string_view key);

  const nlohmann::json& j_;
  std::string prefix_;
  // The object's own keys (their strings live in j_) that were asked for: reading a
  // field costs one lookup, no copy of its name. Few, so a vector.
  std::vector<const std::string*> known_;
  std::optional<FieldError> error_;
};

}  // namespace tessel::api
