// RFC 3339 timestamps as the API writes and reads them (declared in job.hpp).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "tessel/api/job.hpp"

namespace tessel::api {

namespace {
// Years 0001..9999 are all RFC 3339 can write; the formatter clamps to them.
constexpr int64_t kMinRfc3339Ms = -62135596800000;  // 0001-01-01T00:00:00.000Z
constexpr int64_t kMaxRfc3339Ms = 253402300799999;  // 9999-12-31T23:59:59.999Z

// Reads exactly `n` ASCII digits at `pos`; advances `pos`.
std::optional<int> digits(std::string_view s, size_t& pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || (s[pos] != c && s[pos] != (c | 0x20))) return false;  // 'T'/'t', 'Z'/'z'
  ++pos;
  return true;
}

bool leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(int y, int m) {
  static constexpr std::array<int, 12> days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap_year(y) ? 29 : days[static_cast<size_t>(m - 1)];
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
}  // namespace

std::string format_rfc3339(int64_t unix_ms) {
  unix_ms = std::clamp(unix_ms, kMinRfc3339Ms, kMaxRfc3339Ms);
  const int64_t days = floor_div(unix_ms, 86400000);
  const int64_t ms_of_day = unix_ms - days * 86400000;
  // civil_from_days (H. Hinnant).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  const int year = static_cast<int>(yoe + era * 400 + (month <= 2));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, month, day,
                static_cast<int>(ms_of_day / 3600000), static_cast<int>(ms_of_day / 60000 % 60),
                static_cast<int>(ms_of_day / 1000 % 60), static_cast<int>(ms_of_day % 1000));
  return buf;
}

std::optional<int64_t> parse_rfc3339(std::string_view s) {
  // date-time = full-date "T" partial-time time-offset (RFC 3339 section 5.6); leap seconds
  // (":60") are refused: nothing here produces them and Unix time cannot hold them.
  size_t pos = 0;
  auto year = digits(s, pos, 4);
  if (!year || !expect(s, pos, '-')) return std::nullopt;
  auto month = digits(s, pos, 2);
  if (!month || !expect(s, pos, '-')) return std::nullopt;
  auto day = digits(s, pos, 2);
  if (!day || !expect(s, pos, 'T')) return std::nullopt;
  auto hour = digits(s, pos, 2);
  if (!hour || !expect(s, pos, ':')) return std::nullopt;
  auto minute = digits(s, pos, 2);
  if (!minute || !expect(s, pos, ':')) return std::nullopt;
  auto second = digits(s, pos, 2);
  if (!second) return std::nullopt;
  if (*year < 1 || *month < 1 || *month > 12 || *day < 1 || *day > days_in_month(*year, *month) || *hour > 23 ||
      *minute > 59 || *second > 59)
    return std::nullopt;
  int ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t first = pos;
    for (int scale = 100; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, scale /= 10)
      ms += (s[pos] - '0') * scale;  // digits past milliseconds add 0 (scale reaches 0)
    if (pos == first) return std::nullopt;
  }
  int64_t offset_min = 0;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    auto oh = digits(s, pos, 2);
    if (!oh || !expect(s, pos, ':')) return std::nullopt;
    auto om = digits(s, pos, 2);
    if (!om || *oh > 23 || *om > 59) return std::nullopt;
    offset_min = int64_t{sign} * (*oh * 60 + *om);
  } else if (!expect(s, pos, 'Z')) {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t local_s =
      days_from_civil(*year, *month, *day) * int64_t{86400} + *hour * int64_t{3600} + *minute * int64_t{60} + *second;
  const int64_t unix_ms = (local_s - offset_min * int64_t{60}) * 1000 + ms;
  if (unix_ms < kMinRfc3339Ms || unix_ms > kMaxRfc3339Ms) return std::nullopt;
  return unix_ms;
}

}  // namespace tessel::api
