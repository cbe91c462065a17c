#pragma once
// Reading the CSV a vendor tool printed into named columns, before any value is
// interpreted. Pure: text in, table or error out.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_dialect.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::smi {

struct Row {
  int line = 0;                    // 1-based line number in the tool's output.
  std::string text;                // The line as printed (for messages).
  std::vector<std::string> cells;  // Trimmed, one per column.
};

struct Table {
  bool had_header = false;
  std::vector<std::string> columns;  // Field names, in column order.
  std::vector<Row> rows;

  // The column of `field`, or -1.
  int column_of(std::string_view field) const;
};

// At most this many data rows are accepted (a node has a handful of cards).
inline constexpr size_t kMaxRows = 256;

// Reads a tool's CSV output. `requested` is the field list the tool was asked for
// (every name must be a field of `dialect`): it gives the column order when the output
// has no header. A header row (the first non-blank line, every cell a field name with
// an optional "[unit]", at least one a field of `dialect`) decides the columns instead
// and must contain every requested field; header names unknown to the dialect are kept
// as columns and ignored by later stages. With `requested` empty a header is required.
// Blank lines are skipped; every other line must have exactly one cell per column.
// Errors name the tool, the line number and the line: `hl-smi line 3: expected 12
// fields, got 5: "..."`.
Result<Table> read_table(const Dialect& dialect, std::string_view text, const std::vector<std::string>& requested);

}  // namespace tessel::agent::smi
