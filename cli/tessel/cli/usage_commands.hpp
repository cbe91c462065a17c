#pragma once
// `tessel usage`: accounting, card-seconds of ended job attempts by project or user
// and model over a window (GET /v1/usage). Returns the process exit code (app.hpp).

#include <cstdint>
#include <string>

#include "tessel/base/result.hpp"
#include "tessel/cli/session.hpp"

namespace tessel::cli {

struct UsageOptions {
  std::string by = "project";  // "project" or "user".
  std::string since, until;    // RFC 3339, or a duration ago ("7d"); empty: the server's default.
  std::string project, user;   // Filters; empty: none (the server checks the names).
  bool json = false;           // --json: as -o json.
};

int cmd_usage(Session& s, const UsageOptions& o);

// An RFC 3339 time as given, or a duration before `now_ms` ("7d", "12h") as RFC 3339;
// errors name `flag`.
Result<std::string> usage_time_arg(const std::string& flag, const std::string& text, int64_t now_ms);

}  // namespace tessel::cli
