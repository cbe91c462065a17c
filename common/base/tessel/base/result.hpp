#pragma once
// Errors as values at module boundaries: a function that can fail returns its
// error instead of throwing, so the failure shows in its signature (docs/errors.md).
// A Result<T> holds either a T or an Error; callers add context with
// Error::wrap("what I was doing") so messages read "reading inventory: hl-smi exited 3: ...".

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tessel {

// What kind of failure an Error is. http_status_of() (tessel/base/http_status.hpp)
// is the one place it becomes an HTTP status; everything else only names the kind.
enum class ErrorCode {
  internal,                         // A bug or an unexpected failure (500). The default.
  invalid_argument,                 // Bad input; `field` names it when it is one field (400).
  unauthenticated,                  // No or unknown credentials (401).
  permission_denied,                // Known caller, not allowed (403).
  not_found,                        // (404)
  conflict,                         // The request does not fit the current state (409).
  payload_too_large,                // (413)
  unavailable,                      // Try again later: storage failing, shutting down, peer unreachable (503).
  method_not_allowed,               // A known path that does not take this method (405).
  request_header_fields_too_large,  // The request line and headers are over the server's limit (431).
  resource_exhausted,               // A per-tenant limit is reached: retry once below it (429).
};
const char* to_string(ErrorCode c);

struct Error {
  std::string message;
  ErrorCode code = ErrorCode::internal;
  std::string field;  // The input field at fault, when there is one.

  Error() = default;
  explicit Error(std::string msg, ErrorCode c = ErrorCode::internal, std::string f = "")
      : message(std::move(msg)), code(c), field(std::move(f)) {}

  // Returns a copy whose message is "context: message" (same code and field).
  [[nodiscard]] Error wrap(const std::string& context) const { return Error{context + ": " + message, code, field}; }

  static Error invalid(std::string msg, std::string field = "") {
    return Error{std::move(msg), ErrorCode::invalid_argument, std::move(field)};
  }
  static Error unauthenticated(std::string msg) { return Error{std::move(msg), ErrorCode::unauthenticated, ""}; }
  static Error forbidden(std::string msg) { return Error{std::move(msg), ErrorCode::permission_denied, ""}; }
  static Error not_found(std::string msg) { return Error{std::move(msg), ErrorCode::not_found, ""}; }
  static Error conflict(std::string msg) { return Error{std::move(msg), ErrorCode::conflict, ""}; }
  static Error too_large(std::string msg) { return Error{std::move(msg), ErrorCode::payload_too_large, ""}; }
  static Error unavailable(std::string msg) { return Error{std::move(msg), ErrorCode::unavailable, ""}; }
  static Error internal(std::string msg) { return Error{std::move(msg), ErrorCode::internal, ""}; }
};

inline const char* to_string(ErrorCode c) {
  switch (c) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::unauthenticated: return "unauthenticated";
    case ErrorCode::permission_denied: return "permission_denied";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::conflict: return "conflict";
    case ErrorCode::payload_too_large: return "payload_too_large";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::method_not_allowed: return "method_not_allowed";
    case ErrorCode::request_header_fields_too_large: return "request_header_fields_too_large";
    case ErrorCode::resource_exhausted: return "resource_exhausted";
    case ErrorCode::internal: break;
  }
  return "internal";
}

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
