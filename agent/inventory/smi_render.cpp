#include "tessel/agent/smi_render.hpp"

#include "tessel/agent/smi_text.hpp"

namespace tessel::agent::smi {

Result<Format> parse_format(std::string_view spec) {
  Format fmt;
  bool csv = false;
  for (const std::string& part : split_cells(spec)) {
    if (part == "csv") {
      csv = true;
    } else if (part == "noheader") {
      fmt.header = false;
    } else if (part == "nounits") {
      fmt.units = false;
    } else {
      return Error{"unknown format option \"" + part + "\""};
    }
  }
  if (!csv) return Error{"format must include csv"};
  return fmt;
}

Result<Table> read_fixture(const Dialect& dialect, std::string_view text) { return read_table(dialect, text, {}); }

Result<std::string> render_csv(const Dialect& dialect, const Table& fixture, const std::vector<std::string>& fields,
                               Format fmt) {
  std::vector<const Field*> cols;
  std::vector<int> source;
  for (const std::string& name : fields) {
    const Field* f = dialect.find(name);
    if (!f) return Error{"Field \"" + name + "\" is not a valid field to query."};
    int c = fixture.column_of(name);
    if (c < 0) return Error{"fixture has no column \"" + name + "\""};
    cols.push_back(f);
    source.push_back(c);
  }
  std::string out;
  if (fmt.header) {
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) out += ", ";
      out += cols[i]->name;
      if (!cols[i]->unit.empty()) out += " [" + cols[i]->unit + "]";
    }
    out += '\n';
  }
  for (const Row& row : fixture.rows) {
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) out += ", ";
      const std::string& v = row.cells[source[i]];
      out += v;
      if (fmt.units && !cols[i]->unit.empty() && !is_not_available(v)) out += " " + cols[i]->unit;
    }
    out += '\n';
  }
  return out;
}

}  // namespace tessel::agent::smi
