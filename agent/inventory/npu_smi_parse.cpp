#include "tessel/agent/npu_smi_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::ascend {

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.
constexpr int64_t kMaxId = 1023;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// The cells of a table row "| a | b | c |", trimmed.
std::vector<std::string_view> cells(std::string_view row) {
  std::vector<std::string_view> out;
  row = trim(row);
  row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  size_t start = 0;
  for (size_t i = 0; i <= row.size(); ++i) {
    if (i == row.size() || row[i] == '|') {
      out.push_back(trim(row.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "0000:C1:00.0": domain:bus:device.function in hex.
bool is_bus_id(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != 4 && i != 7 && i != 10 && !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A whole non-negative decimal integer of at most 9 digits.
std::optional<int64_t> whole(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// A reading such as "70.5" or "42", rounded; nullopt for "NA", "-" and anything else.
std::optional<int64_t> reading(std::string_view s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  size_t dots = 0;
  for (char c : s) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return std::nullopt;
  }
  if (dots > 1 || s.front() == '.' || s.back() == '.') return std::nullopt;
  return std::llround(std::strtod(std::string(s).c_str(), nullptr));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Npu {
  int64_t id = 0;
  std::string name;
  std::string health;
  std::optional<int64_t> power_w;
  std::optional<int64_t> temperature_c;
};

class Parser {
 public:
  Result<smi::ParsedDevices> run(std::string_view text) {
    size_t line_no = 0;
    while (!text.empty()) {
      const size_t nl = text.find('\n');
      const std::string_view line = trim(text.substr(0, nl));
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      ++line_no;
      if (!printable_ascii(line)) return fail(line_no, "not printable ASCII");
      if (starts_with(line, "+")) {
        npu_.reset();  // A rule ends a block.
        continue;
      }
      if (!starts_with(line, "|")) continue;  // Notes npu-smi prints around its tables.
      auto st = row(line_no, cells(line));
      if (!st) return st.error();
      if (done_) break;
    }
    if (!seen_header_) return Error{"npu-smi: no device table"};
    std::sort(out_.devices.begin(), out_.devices.end(),
              [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
    return std::move(out_);
  }

 private:
  static Error fail(size_t line_no, const std::string& why) {
    return Error{"npu-smi line " + std::to_string(line_no) + ": " + why};
  }

  Status row(size_t line_no, const std::vector<std::string_view>& c) {
    if (c.size() == 1 && c[0].find("Version:") != std::string_view::npos) {
      auto v = words(c[0].substr(c[0].find("Version:") + 8));
      if (!v.empty() && v[0].size() <= kMaxText) out_.driver_version = std::string(v[0]);
      return ok_status();
    }
    if (c.size() == 1) return ok_status();  // "No running processes found in NPU 0".
    if (c.size() < 3) return seen_header_ ? fail(line_no, "expected at least 3 cells") : ok_status();
    if (starts_with(c[0], "NPU") && starts_with(c[1], "Process")) {
      done_ = true;  // The process table: nothing more about devices.
      return ok_status();
    }
    if (starts_with(c[0], "NPU") && starts_with(c[1], "Health")) {
      seen_header_ = true;
      return ok_status();
    }
    if (starts_with(c[0], "Chip")) {
      auto names = words(c[0]);
      device_column_ = names.size() >= 2 && names[1] == "Device";
      return ok_status();
    }
    if (!seen_header_) return ok_status();
    return is_bus_id(c[1]) ? chip_row(line_no, c) : npu_row(line_no, c);
  }

  Status npu_row(size_t line_no, const std::vector<std::string_view>& c) {
    auto first = words(c[0]);
    if (first.empty()) return fail(line_no, "NPU row without an NPU id");
    auto id = whole(first[0]);
    if (!id || *id > kMaxId) return fail(line_no, "NPU id must be an integer 0..1023");
    Npu npu;
    npu.id = *id;
    const std::string_view name = trim(c[0].substr(first[0].size()));
    if (name.size() > kMaxText) return fail(line_no, "name longer than 64 bytes");
    npu.name = std::string(name);
    if (c[1].empty() || c[1].size() > kMaxText) return fail(line_no, "health must be 1..64 bytes");
    npu.health = std::string(c[1]);
    auto readings = words(c[2]);
    if (readings.size() >= 1) npu.power_w = reading(readings[0]);
    if (readings.size() >= 2) npu.temperature_c = reading(readings[1]);
    npu_ = std::move(npu);
    return ok_status();
  }

  Status chip_row(size_t line_no, const std::vector<std::string_view>& c) {
    if (!npu_) return fail(line_no, "chip row before any NPU row");
    auto ids = words(c[0]);
    if (ids.empty() || ids.size() > 2) return fail(line_no, "chip cell must hold \"Chip\" or \"Chip Device\"");
    std::optional<int64_t> device = ids.size() == 2 && device_column_ ? whole(ids[1]) : npu_->id;
    if (!whole(ids[0]) || !device || *device > kMaxId)
      return fail(line_no, "chip and device ids must be integers 0..1023");
    if (!seen_.insert(*device).second) return fail(line_no, "duplicate device " + std::to_string(*device));
    if (out_.devices.size() == kMaxDevices)
      return Error{"npu-smi: more than " + std::to_string(kMaxDevices) + " devices"};
    api::Device d;
    d.index = d.module_id = static_cast<int>(*device);
    d.model = npu_->name;
    d.bus_id = std::string(c[1]);
    d.uuid = "NPU-" + lower(c[1]);
    d.power_w = npu_->power_w;
    d.temperature_c = npu_->temperature_c;
    auto usage = words(c[2]);
    if (usage.size() >= 2 && usage[1] != "/") d.utilization_pct = reading(usage[0]);
    for (size_t i = 1; i + 1 < usage.size(); ++i) {
      if (usage[i] != "/") continue;
      d.memory_used_mib = whole(usage[i - 1]);
      d.memory_total_mib = whole(usage[i + 1]);
    }
    if (d.utilization_pct && *d.utilization_pct > 100) d.utilization_pct.reset();
    if (npu_->health != "OK" && npu_->health != "Warning") {
      d.healthy = false;
      d.health_reason = "npu-smi health: " + npu_->health;
    }
    out_.devices.push_back(std::move(d));
    return ok_status();
  }

  smi::ParsedDevices out_;
  std::optional<Npu> npu_;
  std::set<int64_t> seen_;
  bool seen_header_ = false;
  bool device_column_ = false;  // The header names a "Device" (logical id) beside "Chip".
  bool done_ = false;
};

}  // namespace

const std::vector<std::string>& info_args() {
  static const std::vector<std::string> args = {"info"};
  return args;
}

Result<smi::ParsedDevices> parse_npu_smi_info(std::string_view text) { return Parser().run(text); }

}  // namespace tessel::agent::ascend
