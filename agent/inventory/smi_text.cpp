#include "tessel/agent/smi_text.hpp"

#include <cctype>
#include <cstdio>
#include <limits>

namespace tessel::agent::smi {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view s) { return trim(s).empty(); }

std::vector<std::string> split_cells(std::string_view line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    size_t end = line.find(',', start);
    if (end == std::string_view::npos) {
      cells.emplace_back(trim(line.substr(start)));
      return cells;
    }
    cells.emplace_back(trim(line.substr(start, end - start)));
    start = end + 1;
  }
}

static bool is_name_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_';
}

std::optional<HeaderCell> parse_header_cell(std::string_view cell) {
  cell = trim(cell);
  HeaderCell out;
  size_t bracket = cell.find('[');
  std::string_view name = trim(cell.substr(0, bracket));
  if (bracket != std::string_view::npos) {
    std::string_view rest = cell.substr(bracket + 1);
    if (rest.empty() || rest.back() != ']') return std::nullopt;
    rest.remove_suffix(1);
    if (rest.find_first_of("[]") != std::string_view::npos) return std::nullopt;
    out.unit = std::string(trim(rest));
  }
  if (name.empty() || !std::islower(static_cast<unsigned char>(name.front()))) return std::nullopt;
  for (char c : name)
    if (!is_name_char(c)) return std::nullopt;
  out.name = std::string(name);
  return out;
}

std::string quote_line(std::string_view line) {
  constexpr size_t kMax = 120;
  std::string out = "\"";
  for (size_t i = 0; i < line.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (line.size() > kMax) out += "...";
  return out;
}

bool is_not_available(std::string_view cell) {
  cell = trim(cell);
  return cell == "N/A" || cell == "[N/A]" || cell == "[Not Supported]";
}

static bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

static std::string expected(std::string_view unit) {
  return unit.empty() ? "expected a number" : "expected a number of " + std::string(unit);
}

Result<std::optional<int64_t>> parse_quantity(std::string_view cell, std::string_view unit) {
  cell = trim(cell);
  if (is_not_available(cell)) return std::optional<int64_t>{};
  size_t i = 0;
  int64_t whole = 0;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 10 - 1;
  while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) {
    if (whole > kMax) return Error{"value out of range: \"" + std::string(cell) + "\""};
    whole = whole * 10 + (cell[i] - '0');
    ++i;
  }
  if (i == 0) return Error{expected(unit) + ", got " + quote_line(cell)};
  if (i < cell.size() && cell[i] == '.') {
    ++i;
    size_t frac_start = i;
    while (i < cell.size() && std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
    if (i == frac_start) return Error{expected(unit) + ", got " + quote_line(cell)};
    if (cell[frac_start] >= '5') ++whole;
  }
  std::string_view rest = trim(cell.substr(i));
  if (!rest.empty() && (unit.empty() || !iequals(rest, unit)))
    return Error{expected(unit) + ", got " + quote_line(cell)};
  return std::optional<int64_t>{whole};
}

Result<int> parse_small_int(std::string_view cell, int max) {
  cell = trim(cell);
  if (cell.empty() || cell.size() > 9) return Error{"expected an integer, got " + quote_line(cell)};
  int v = 0;
  for (char c : cell) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return Error{"expected an integer, got " + quote_line(cell)};
    v = v * 10 + (c - '0');
  }
  if (v > max) return Error{"value " + std::to_string(v) + " exceeds " + std::to_string(max)};
  return v;
}

}  // namespace tessel::agent::smi
