#pragma once
// Aligned text tables in the style of `kubectl get` and `squeue`: a header row,
// columns separated by three spaces, each column as wide as its widest cell.
// Widths count UTF-8 code points, so non-ASCII cells stay aligned (wide East
// Asian characters are not special-cased). Trailing spaces are trimmed.

#include <string>
#include <vector>

namespace tessel::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);

  // A row with fewer cells than headers is padded with empty cells; extra cells are dropped.
  void add_row(std::vector<std::string> cells);
  [[nodiscard]] size_t rows() const { return rows_.size(); }

  // The whole table, one line per row, each ending in '\n'.
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// `s` with control characters (newline, escape, ...) replaced by '?', so text from
// the server cannot break the layout or drive the terminal.
std::string printable(std::string s);

// Display width of a UTF-8 string in code points.
size_t display_width(const std::string& s);

}  // namespace tessel::cli
