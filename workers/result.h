// Result<T>: a value or an error message. Errors are values at the workers'
// module boundaries (docs/errors.md); LibTorch and c10d exceptions are caught
// by the thin adapters that call them and turned into an Error here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tessel::workers {

struct Error {
  std::string message;

  // Prefix the message with what the caller was doing: "loading x: <why>".
  Error context(const std::string& what) const { return Error{what + ": " + message}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent: empty on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}
  static Status Ok() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace tessel::workers
