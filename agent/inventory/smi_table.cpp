#include "tessel/agent/smi_table.hpp"

#include <set>

#include "tessel/agent/smi_text.hpp"

namespace tessel::agent::smi {

int Table::column_of(std::string_view field) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == field) return static_cast<int>(i);
  return -1;
}

// The header's field names, or nullopt when `line` is not a header of this tool.
static std::optional<std::vector<std::string>> header_names(const Dialect& dialect, std::string_view line) {
  std::vector<std::string> names;
  bool any_known = false;
  for (const std::string& cell : split_cells(line)) {
    auto h = parse_header_cell(cell);
    if (!h) return std::nullopt;
    if (dialect.find(h->name)) any_known = true;
    names.push_back(h->name);
  }
  if (!any_known) return std::nullopt;
  return names;
}

static std::string at_line(const Dialect& d, int line) { return d.tool + " line " + std::to_string(line); }

Result<Table> read_table(const Dialect& dialect, std::string_view text, const std::vector<std::string>& requested) {
  std::set<std::string> seen;
  for (const std::string& f : requested) {
    if (!dialect.find(f)) return Error{dialect.tool + ": unknown field \"" + f + "\""};
    if (!seen.insert(f).second) return Error{dialect.tool + ": field \"" + f + "\" requested twice"};
  }

  Table table;
  table.columns = requested;
  std::vector<std::string_view> lines = split_lines(text);
  bool first = true;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    std::string_view line = lines[i];
    if (is_blank(line)) continue;
    if (first) {
      first = false;
      if (auto names = header_names(dialect, line)) {
        std::set<std::string> unique(names->begin(), names->end());
        if (unique.size() != names->size())
          return Error{at_line(dialect, line_no) + ": header names a field twice: " + quote_line(line)};
        for (const std::string& f : requested)
          if (!unique.count(f))
            return Error{at_line(dialect, line_no) + ": header lacks requested field \"" + f +
                         "\": " + quote_line(line)};
        table.had_header = true;
        table.columns = std::move(*names);
        continue;
      }
      if (requested.empty()) return Error{at_line(dialect, line_no) + ": expected a header row: " + quote_line(line)};
    }
    std::vector<std::string> cells = split_cells(line);
    if (cells.size() != table.columns.size())
      return Error{at_line(dialect, line_no) + ": expected " + std::to_string(table.columns.size()) + " fields, got " +
                   std::to_string(cells.size()) + ": " + quote_line(line)};
    if (table.rows.size() >= kMaxRows)
      return Error{at_line(dialect, line_no) + ": more than " + std::to_string(kMaxRows) + " rows"};
    table.rows.push_back(Row{line_no, std::string(line), std::move(cells)});
  }
  if (requested.empty() && !table.had_header) return Error{dialect.tool + ": empty output, expected a header row"};
  return table;
}

}  // namespace tessel::agent::smi
