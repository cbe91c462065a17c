#pragma once
// ApiError: an error a REST handler turns into
// {"error":{"code":..., "message":..., "field":...}} with the matching status.
// ApiResult<T> holds a value or an ApiError (errors as values, lesson 1).

#include <string>
#include <utility>
#include <variant>

namespace tessel::scheduler {

struct ApiError {
  int status = 500;
  std::string code = "internal";
  std::string message;
  std::string field;  // Empty when the error is not about one field.

  static ApiError invalid(std::string msg, std::string field = "") {
    return {400, "invalid_argument", std::move(msg), std::move(field)};
  }
  static ApiError unauthenticated(std::string msg) { return {401, "unauthenticated", std::move(msg), ""}; }
  static ApiError forbidden(std::string msg) { return {403, "permission_denied", std::move(msg), ""}; }
  static ApiError not_found(std::string msg) { return {404, "not_found", std::move(msg), ""}; }
  static ApiError conflict(std::string msg) { return {409, "conflict", std::move(msg), ""}; }
  static ApiError too_large(std::string msg) { return {413, "payload_too_large", std::move(msg), ""}; }
  static ApiError unavailable(std::string msg) { return {503, "unavailable", std::move(msg), ""}; }
  static ApiError internal(std::string msg) { return {500, "internal", std::move(msg), ""}; }
};

// 503 for a write the database refused (disk full, read-only, I/O error): nothing changed.
inline ApiError storage_unavailable(const std::string& what, const std::string& detail = "") {
  return ApiError::unavailable("storage unavailable: " + what + " was not saved" +
                               (detail.empty() ? "" : " (" + detail + ")") + "; reads still work, retry later");
}

template <class T>
using ApiResult = std::variant<T, ApiError>;

template <class T>
const ApiError* api_error(const ApiResult<T>& r) {
  return std::get_if<ApiError>(&r);
}

}  // namespace tessel::scheduler
