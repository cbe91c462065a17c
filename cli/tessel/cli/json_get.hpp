#pragma once
// Lenient reads of API JSON for display. The CLI shows what the server sent and
// must not crash on a field that is missing or of another type (an older or newer
// server): these return a fallback instead of throwing.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tessel::cli {

inline const nlohmann::json& get_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

inline std::string get_string(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  const auto& v = get_field(j, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

inline std::optional<int64_t> get_int(const nlohmann::json& j, const char* key) {
  const auto& v = get_field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {  // Cast only what fits: a double out of range is undefined behaviour.
    double d = v.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

inline bool get_bool(const nlohmann::json& j, const char* key, bool fallback) {
  const auto& v = get_field(j, key);
  return v.is_boolean() ? v.get<bool>() : fallback;
}

// A scalar as text: strings as is, numbers in decimal, null/missing as "".
inline std::string get_text(const nlohmann::json& j, const char* key) {
  const auto& v = get_field(j, key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

}  // namespace tessel::cli
