#pragma once
// Node names as Slurm users type them (`-w`, `-x`, `scontrol show hostnames`): a
// hostlist is names separated by commas, where a name may hold bracketed ranges
// that expand to every name they stand for:
//   "n1,n4"            n1 n4
//   "n[1-3,7]"         n1 n2 n3 n7
//   "gpu[08-10]"       gpu08 gpu09 gpu10 (a bound written with a leading zero sets the width)
//   "r[1-2]-n[1-2]"    r1-n1 r1-n2 r2-n1 r2-n2 (several brackets: every combination, in order)
// Commas inside brackets separate ranges, not names.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::cli {

// The most names one hostlist may expand to, and the longest text it may be.
inline constexpr size_t kMaxHostlistNames = 4096;
inline constexpr size_t kMaxHostlistChars = 65536;

// Expands `text`, in order (duplicates kept). An empty name, an unbalanced or nested
// bracket, a range that is not digits (`[a-c]`), one running backwards (`[5-2]`),
// more than 9 digits, or more than kMaxHostlistNames names is an error quoting the text.
Result<std::vector<std::string>> expand_hostlist(std::string_view text);

// Every value of a repeatable flag (`-w n[1-2] -w n7`) expanded, in order; the error
// names the flag, as a bad value's field (Error::field).
Result<std::vector<std::string>> expand_hostlists(const std::vector<std::string>& values, const char* flag);

}  // namespace tessel::cli
