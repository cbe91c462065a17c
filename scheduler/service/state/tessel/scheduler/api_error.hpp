#pragma once
// The scheduler's errors are tessel::Error values (tessel/base/result.hpp): an
// ErrorCode and, for bad input, the field at fault. The HTTP layer turns them into
// {"error":{"code","message","field"}} with the matching status (tessel::http_status_of).

#include <string>

#include "tessel/base/result.hpp"

namespace tessel::scheduler {

// 503 for a write the database refused (disk full, read-only, I/O error): nothing changed.
inline Error storage_unavailable(const std::string& what, const std::string& detail = "") {
  return Error::unavailable("storage unavailable: " + what + " was not saved" +
                            (detail.empty() ? "" : " (" + detail + ")") + "; reads still work, retry later");
}

}  // namespace tessel::scheduler
