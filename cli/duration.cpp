#include "tessel/cli/duration.hpp"

#include <array>
#include <cctype>
#include <vector>

namespace tessel::cli {
namespace {

Error bad(std::string_view text, const std::string& why) {
  return Error::invalid("invalid duration '" + std::string(text.substr(0, 64)) + "': " + why);
}

// Reads a run of digits at `pos`; false when there are none or the value overflows.
bool read_number(std::string_view s, size_t& pos, int64_t& out) {
  size_t start = pos;
  int64_t v = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
    if (v > kMaxDurationS) return false;  // Keep going would overflow; already too large.
    v = v * 10 + (s[pos] - '0');
    ++pos;
  }
  out = v;
  return pos > start && v <= kMaxDurationS * 10;
}

Result<int64_t> checked(std::string_view text, int64_t total) {
  if (total > kMaxDurationS) return bad(text, "too large");
  return total;
}

// "1d2h3m4s" and "90".
Result<int64_t> parse_units(std::string_view s) {
  static constexpr std::array<std::pair<char, int64_t>, 4> kUnits = {{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};
  size_t pos = 0;
  size_t next_unit = 0;  // Index into kUnits of the smallest unit still allowed.
  int64_t total = 0;
  bool any_unit = false;
  while (pos < s.size()) {
    int64_t n = 0;
    if (!read_number(s, pos, n)) {
      if (pos < s.size() && !std::isdigit(static_cast<unsigned char>(s[pos])))
        return bad(s, "expected a number at '" + std::string(s.substr(pos, 8)) + "'");
      return bad(s, "too large");
    }
    if (pos == s.size()) {
      if (any_unit) return bad(s, "number without a unit at the end (use s, m, h or d)");
      return checked(s, n);  // Bare number: seconds.
    }
    char u = s[pos++];
    size_t i = next_unit;
    while (i < kUnits.size() && kUnits[i].first != u) ++i;
    if (i == kUnits.size()) {
      for (const auto& k : kUnits)
        if (k.first == u) return bad(s, "units must go from largest to smallest, each once");
      return bad(s, std::string("unknown unit '") + u + "' (use s, m, h or d)");
    }
    if (n > kMaxDurationS / kUnits[i].second) return bad(s, "too large");
    total += n * kUnits[i].second;
    if (total > kMaxDurationS) return bad(s, "too large");
    next_unit = i + 1;
    any_unit = true;
  }
  return checked(s, total);
}

// Slurm's "[D-]HH:MM:SS" family.
Result<int64_t> parse_colons(std::string_view s) {
  int64_t days = 0;
  bool has_days = false;
  std::string_view rest = s;
  if (auto dash = s.find('-'); dash != std::string_view::npos) {
    size_t pos = 0;
    std::string_view d = s.substr(0, dash);
    if (!read_number(d, pos, days) || pos != d.size()) return bad(s, "expected days before '-'");
    has_days = true;
    rest = s.substr(dash + 1);
  }
  std::vector<int64_t> fields;
  size_t pos = 0;
  while (true) {
    int64_t n = 0;
    if (!read_number(rest, pos, n)) return bad(s, "expected a number in each ':' field");
    fields.push_back(n);
    if (pos == rest.size()) break;
    if (rest[pos] != ':') return bad(s, std::string("unexpected '") + rest[pos] + "'");
    ++pos;
  }
  if (fields.size() > 3) return bad(s, "too many ':' fields (at most HH:MM:SS)");
  int64_t h = 0, m = 0, sec = 0;
  if (has_days) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    h = fields[0];
    if (fields.size() > 1) m = fields[1];
    if (fields.size() > 2) sec = fields[2];
    if (h > 23) return bad(s, "hours after 'D-' must be 0..23");
    if (m > 59 || sec > 59) return bad(s, "minutes and seconds must be 0..59");
  } else if (fields.size() == 2) {  // MM:SS
    m = fields[0];
    sec = fields[1];
    if (sec > 59) return bad(s, "seconds must be 0..59");
  } else if (fields.size() == 3) {  // HH:MM:SS
    h = fields[0];
    m = fields[1];
    sec = fields[2];
    if (m > 59 || sec > 59) return bad(s, "minutes and seconds must be 0..59");
  } else {
    return bad(s, "expected MM:SS, HH:MM:SS or D-HH[:MM[:SS]]");
  }
  if (days > kMaxDurationS / 86400 || h > kMaxDurationS / 3600 || m > kMaxDurationS / 60) return bad(s, "too large");
  return checked(s, days * 86400 + h * 3600 + m * 60 + sec);
}

}  // namespace

Result<int64_t> parse_duration(std::string_view text) {
  if (text.empty()) return bad(text, "empty");
  if (text.size() > 64) return bad(text, "too long");
  for (char c : text) {
    if (c == ':' || c == '-') return parse_colons(text);
  }
  return parse_units(text);
}

std::string format_age(int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < int64_t{2} * 3600) return std::to_string(s / 60) + "m";
  if (s < int64_t{48} * 3600) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string format_duration(int64_t s) {
  if (s <= 0) return "0s";
  std::string out;
  static constexpr std::array<std::pair<char, int64_t>, 4> kUnits = {{{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}}};
  for (const auto& [u, n] : kUnits) {
    if (s >= n) {
      out += std::to_string(s / n) + u;
      s %= n;
    }
  }
  return out;
}

}  // namespace tessel::cli
