#pragma once
// Errors as values at module boundaries (see shared/docs/style.md, lesson 1).
// A Result<T> holds either a T or an Error; callers add context with
// Error::wrap("what I was doing") so messages read "reading inventory: hl-smi exited 3: ...".

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessel {

struct Error {
  std::string message;

  // Returns a copy whose message is "context: message".
  [[nodiscard]] Error wrap(const std::string& context) const { return Error{context + ": " + message}; }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  [[nodiscard]] const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace tessel
