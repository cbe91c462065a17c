#pragma once
// Checked integer reads from JSON. nlohmann's get<int>() casts whatever number it finds:
// a float out of range is undefined behaviour and 2^40 silently wraps. JsonInts accepts
// only JSON integers that fit T. It never throws: the first problem is kept as
// "field: what is wrong", later reads give 0 (or the fallback), and the parser checks
// error() once before it uses what it read, as FieldReader's callers do.

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"

namespace tessel::api {

class JsonInts {
 public:
  // `v` itself, named `field` in the error.
  template <std::integral T>
  T of(const nlohmann::json& v, const std::string& field) {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (std::in_range<T>(u)) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
      auto s = v.get<int64_t>();
      if (std::in_range<T>(s)) return static_cast<T>(s);
    } else {
      fail(field + ": must be an integer");
      return T{};
    }
    fail(field + ": out of range");
    return T{};
  }

  // obj[key], which must be present.
  template <std::integral T>
  T at(const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      fail(std::string(key) + ": is required");
      return T{};
    }
    return of<T>(*it, key);
  }

  // obj[key], or `fallback` when absent or null.
  template <std::integral T>
  T at_or(const nlohmann::json& obj, const char* key, T fallback) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    return of<T>(*it, key);
  }

  // obj[key] as an array of integers, which must be present.
  template <std::integral T>
  std::vector<T> list_at(const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_array()) {
      fail(std::string(key) + ": must be an array of integers");
      return {};
    }
    std::vector<T> out;
    out.reserve(it->size());
    for (const auto& v : *it) out.push_back(of<T>(v, key));
    return out;
  }

  // Records `message` unless a problem is already recorded.
  void fail(std::string message) {
    if (!error_) error_ = std::move(message);
  }
  // The first problem ("field: what is wrong"), or nullopt.
  [[nodiscard]] const std::optional<std::string>& error() const { return error_; }

 private:
  std::optional<std::string> error_;
};

// Runs `read(ints)` with a fresh JsonInts. When `ints` recorded a problem, that problem
// came before anything `read` returned after it, so it is the answer; so is an exception
// of nlohmann's (a member missing for at(), or of the wrong type for get()). Either
// becomes `how` with ": " and the problem appended to its message (same code and field):
//   read_json(Error::invalid("assignment"), [&](JsonInts& ints) -> Result<Assignment> {...})
template <class F>
auto read_json(const Error& how, F&& read) -> decltype(read(std::declval<JsonInts&>())) {
  JsonInts ints;
  try {
    auto out = read(ints);
    if (ints.error()) return Error{how.message + ": " + *ints.error(), how.code, how.field};
    return out;
  } catch (const nlohmann::json::exception& e) {
    return Error{how.message + ": " + e.what(), how.code, how.field};
  }
}

}  // namespace tessel::api
