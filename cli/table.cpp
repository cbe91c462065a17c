#include "tessel/cli/table.hpp"

#include <algorithm>

namespace tessel::cli {

namespace {
constexpr const char* kGap = "   ";
}  // namespace

std::string printable(std::string s) {
  for (char& c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return s;
}

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;  // Count bytes that start a code point.
  return n;
}

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  for (auto& c : cells) c = printable(std::move(c));
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<size_t> width(headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) width[i] = display_width(headers_[i]);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], display_width(r[i]));

  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) l += kGap;
      l += cells[i];
      if (i + 1 < cells.size()) l.append(width[i] - display_width(cells[i]), ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
    out += '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
  return out;
}

}  // namespace tessel::cli
