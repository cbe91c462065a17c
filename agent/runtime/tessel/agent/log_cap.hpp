#pragma once
// The per-rank log cap. A rank writes its output straight into its log file
// (O_APPEND, no copy through the supervisor); the supervisor looks at each log at
// least once a second and once the rank has ended, and when one has grown past the
// cap, cuts it back to the cap and appends one marker line. Output after that is
// dropped (each look cuts the file back to the cap and the marker), so a task's logs
// hold at most the cap plus about a second of its output, and the result says which
// ranks were cut.

#include <cstdint>
#include <string>

namespace tessel::agent {

// The line appended where a log was cut.
std::string log_cap_marker(int64_t cap_bytes);

// Cuts `path` back when it is past `cap_bytes` (cap + marker once cut). Returns true
// when the log is (now or already) cut. A missing file, or cap 0, is left alone.
bool enforce_log_cap(const std::string& path, int64_t cap_bytes);

}  // namespace tessel::agent
