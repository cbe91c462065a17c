#pragma once
// Checked integer reads from JSON. nlohmann's get<int>() casts whatever number it finds:
// a float out of range is undefined behaviour and 2^40 silently wraps. These accept only
// JSON integers that fit T and otherwise throw JsonIntError naming the field, so parsers
// of outside input (which catch std::exception) answer with an error instead.

#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessel::api {

struct JsonIntError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <std::integral T>
T json_int(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    auto s = v.get<int64_t>();
    if (std::in_range<T>(s)) return static_cast<T>(s);
  } else {
    throw JsonIntError(field + ": must be an integer");
  }
  throw JsonIntError(field + ": out of range");
}

// obj[key], which must be present.
template <std::integral T>
T json_int_at(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) throw JsonIntError(std::string(key) + ": is required");
  return json_int<T>(*it, key);
}

// obj[key], or `fallback` when absent or null.
template <std::integral T>
T json_int_or(const nlohmann::json& obj, const char* key, T fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  return json_int<T>(*it, key);
}

// obj[key] as an array of integers, which must be present.
template <std::integral T>
std::vector<T> json_ints_at(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_array()) throw JsonIntError(std::string(key) + ": must be an array of integers");
  std::vector<T> out;
  out.reserve(it->size());
  for (const auto& v : *it) out.push_back(json_int<T>(v, key));
  return out;
}

}  // namespace tessel::api
