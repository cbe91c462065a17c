#include "tessel/agent/rocm_smi_parse.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::amd {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.
constexpr double kMaxValue = 1e15;  // Bytes of memory fit; keeps int64 safe.

// A printable string field of at most kMaxText bytes, else "".
std::string text(const json& card, const char* key) {
  auto v = card.find(key);
  if (v == card.end() || !v->is_string()) return "";
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > kMaxText || !printable_ascii(s)) return "";
  return s;
}

// "123.5" (a number in a string, as rocm-smi prints it) or a JSON number; else nullopt.
std::optional<double> number(const json& card, const char* key) {
  auto v = card.find(key);
  if (v == card.end()) return std::nullopt;
  double x = -1;
  if (v->is_number()) {
    x = v->get<double>();
  } else if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s.empty() || s.size() > 24 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; }) ||
        std::count(s.begin(), s.end(), '.') > 1 || s == ".")
      return std::nullopt;
    x = std::stod(s);
  }
  if (!std::isfinite(x) || x < 0 || x > kMaxValue) return std::nullopt;
  return x;
}

std::optional<int64_t> rounded(std::optional<double> x) {
  return x ? std::optional<int64_t>(std::llround(*x)) : std::nullopt;
}

// "0x7ef570db1b346018" -> "GPU-7ef570db1b346018"; "" for anything but 1..32 hex digits.
std::string rocr_uuid(const std::string& unique_id) {
  std::string hex = unique_id.rfind("0x", 0) == 0 || unique_id.rfind("0X", 0) == 0 ? unique_id.substr(2) : unique_id;
  if (hex.empty() || hex.size() > 32 ||
      !std::all_of(hex.begin(), hex.end(), [](unsigned char c) { return std::isxdigit(c); }))
    return "";
  std::transform(hex.begin(), hex.end(), hex.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "GPU-" + hex;
}

// "card12" -> 12; nullopt for other keys ("card01" too: no leading zeros).
std::optional<int> card_index(const std::string& key) {
  if (key.size() < 5 || key.size() > 8 || key.rfind("card", 0) != 0) return std::nullopt;
  const std::string digits = key.substr(4);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const int n = std::stoi(digits);
  return n <= 1023 ? std::optional<int>(n) : std::nullopt;
}

}  // namespace

const std::vector<std::string>& rocm_smi_args() {
  static const std::vector<std::string> args = {"--showid", "--showuniqueid", "--showproductname", "--showbus",
                                                "--json"};
  return args;
}

Result<smi::ParsedDevices> parse_rocm_smi(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"rocm-smi: not JSON"};
  if (!doc.is_object()) return Error{"rocm-smi: expected {\"card0\": {...}}"};
  smi::ParsedDevices out;
  std::set<int> seen;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    auto index = card_index(it.key());
    if (!index || !it->is_object()) continue;
    if (!seen.insert(*index).second) return Error{"rocm-smi: duplicate card " + std::to_string(*index)};
    if (out.devices.size() == kMaxDevices) return Error{"rocm-smi: more than 64 devices"};
    const json& card = *it;
    api::Device d;
    d.index = d.module_id = *index;
    d.uuid = rocr_uuid(text(card, "Unique ID"));
    d.model = text(card, "Card series");
    if (d.model.empty()) d.model = text(card, "Card SKU");
    if (d.model.empty()) d.model = text(card, "GPU ID");
    d.bus_id = text(card, "PCI Bus");
    if (auto b = number(card, "VRAM Total Memory (B)")) d.memory_total_mib = std::llround(*b / (1024.0 * 1024.0));
    if (auto b = number(card, "VRAM Total Used Memory (B)")) d.memory_used_mib = std::llround(*b / (1024.0 * 1024.0));
    d.utilization_pct = rounded(number(card, "GPU use (%)"));
    d.temperature_c = rounded(number(card, "Temperature (Sensor junction) (C)"));
    d.power_w = rounded(number(card, "Average Graphics Package Power (W)"));
    out.devices.push_back(std::move(d));
  }
  if (out.devices.empty()) return Error{"rocm-smi: expected {\"card0\": {...}}"};
  std::sort(out.devices.begin(), out.devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return out;
}

}  // namespace tessel::agent::amd
