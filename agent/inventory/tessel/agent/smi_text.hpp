#pragma once
// Text helpers shared by the hl-smi and nvidia-smi CSV readers and the fake tools.
// All functions are pure: no I/O, no allocation beyond their results.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::agent::smi {

// Splits text into lines on '\n'; a trailing '\r' on a line is dropped (CRLF output).
// A final newline does not produce an extra empty line.
std::vector<std::string_view> split_lines(std::string_view text);

// Strips spaces, tabs and '\r' on both ends.
std::string_view trim(std::string_view s);
bool is_blank(std::string_view s);

// Splits one CSV row on ',' and trims each cell ("a, b,c " -> {"a","b","c"}).
std::vector<std::string> split_cells(std::string_view line);

// A header cell such as "memory.used [MiB]": the field name and the bracketed unit
// ("" when none). nullopt when the cell does not look like a field name.
struct HeaderCell {
  std::string name;
  std::string unit;
};
std::optional<HeaderCell> parse_header_cell(std::string_view cell);

// A line as shown in an error message: quoted, non-printable bytes escaped, cut at
// 120 characters.
std::string quote_line(std::string_view line);

// True for the vendor tools' spellings of "no value": N/A, [N/A], [Not Supported].
bool is_not_available(std::string_view cell);

// Reads a telemetry value: a non-negative decimal number, optionally followed by
// `unit` (compared case-insensitively, so the old "Mib" passes for "MiB"). A fraction
// is rounded to the nearest integer (226.53 W -> 227). N/A spellings give nullopt.
// An empty `unit` means the value carries none. Errors say what was expected.
Result<std::optional<int64_t>> parse_quantity(std::string_view cell, std::string_view unit);

// Reads a plain non-negative integer no larger than `max` (index, module_id).
Result<int> parse_small_int(std::string_view cell, int max);

}  // namespace tessel::agent::smi
