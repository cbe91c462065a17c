#include "tessel/cli/hostlist.hpp"

#include <cstdint>
#include <optional>

namespace tessel::cli {
namespace {

Error bad(std::string_view text, const std::string& why) {
  return Error{"expected node names such as n1,n[2-4,7], got '" + std::string(text) + "': " + why};
}

// Splits at the commas outside brackets; checks that brackets pair up, unnested.
Result<std::vector<std::string_view>> top_level_items(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  bool inside = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[') {
      if (inside) return bad(text, "a '[' inside brackets");
      inside = true;
    } else if (c == ']') {
      if (!inside) return bad(text, "a ']' without its '['");
      inside = false;
    } else if (c == ',' && !inside) {
      if (i == start) return bad(text, "an empty name");
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (inside) return bad(text, "a '[' without its ']'");
  return items;
}

// A bound of a range: 1 to 9 digits.
std::optional<uint32_t> bound(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  uint32_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

std::string padded(uint32_t v, size_t width) {
  std::string s = std::to_string(v);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// The values a bracket's inside stands for ("1-3,7"), at most `room` of them.
Result<std::vector<std::string>> bracket_values(std::string_view text, std::string_view inside, size_t room) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = inside.find(',', start);
    const std::string_view part = inside.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const size_t dash = part.find('-');
    const std::string_view lo_text = part.substr(0, dash);
    const std::string_view hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    const auto lo = bound(lo_text);
    const auto hi = bound(hi_text);
    if (!lo || !hi) return bad(text, "'[" + std::string(inside) + "]' is not ranges of up to 9 digits");
    if (*hi < *lo) return bad(text, "the range " + std::string(part) + " runs backwards");
    if (*hi - *lo >= room - out.size()) return bad(text, "more than " + std::to_string(kMaxHostlistNames) + " names");
    const size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
    for (uint32_t v = *lo;; ++v) {
      out.push_back(padded(v, width));
      if (v == *hi) break;
    }
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view text) {
  if (text.size() > kMaxHostlistChars)
    return Error{"a hostlist of at most " + std::to_string(kMaxHostlistChars) + " characters, got " +
                 std::to_string(text.size())};
  auto items = top_level_items(text);
  if (!items) return items.error();
  std::vector<std::string> out;
  for (std::string_view item : *items) {
    std::vector<std::string> names{""};
    for (size_t at = 0;;) {
      const size_t open = item.find('[', at);
      const std::string_view literal = item.substr(at, open == std::string_view::npos ? open : open - at);
      for (std::string& n : names) n.append(literal);
      if (open == std::string_view::npos) break;
      const size_t close = item.find(']', open);  // top_level_items() checked it is there.
      const size_t room = (kMaxHostlistNames - out.size()) / names.size();
      if (room == 0) return bad(text, "more than " + std::to_string(kMaxHostlistNames) + " names");
      auto values = bracket_values(text, item.substr(open + 1, close - open - 1), room);
      if (!values) return values.error();
      std::vector<std::string> longer;
      longer.reserve(names.size() * values->size());
      for (const std::string& n : names)
        for (const std::string& v : *values) longer.push_back(n + v);
      names = std::move(longer);
      at = close + 1;
    }
    if (out.size() + names.size() > kMaxHostlistNames)
      return bad(text, "more than " + std::to_string(kMaxHostlistNames) + " names");
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

Result<std::vector<std::string>> expand_hostlists(const std::vector<std::string>& values, const char* flag) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    auto names = expand_hostlist(v);
    if (!names) return Error::invalid(std::string(flag) + ": " + names.error().message, flag);
    if (out.size() + names->size() > kMaxHostlistNames)
      return Error::invalid(std::string(flag) + ": more than " + std::to_string(kMaxHostlistNames) + " names", flag);
    out.insert(out.end(), names->begin(), names->end());
  }
  return out;
}

}  // namespace tessel::cli
