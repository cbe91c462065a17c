// Field readers shared by the parsers of vendor tools that print JSON (cnmon,
// mthreads-gmi): a bounded printable text field and a card index that a tool may
// print as a number or as a decimal string.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::agent {

// Absent or null -> "". An error naming `where` on a non-string, or on a string that
// is not printable ASCII of at most `max_len` bytes.
Result<std::string> json_text(const nlohmann::json* v, const std::string& where, size_t max_len);

// 0..1023, as a JSON integer or a string of 1-4 decimal digits; else an error naming
// `where` (the field, e.g. "CnmonInfo[0].CardNum").
Result<int> json_card_index(const nlohmann::json* v, const std::string& where);

}  // namespace tessel::agent
