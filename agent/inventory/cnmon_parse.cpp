#include "tessel/agent/cnmon_parse.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "tessel/agent/tool_json.hpp"

namespace tessel::agent::cambricon {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxLongText = 128;
constexpr double kMaxValue = 1e12;  // Far above any real reading; keeps int64 safe.

const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// A JSON number, or a string that starts with a non-negative decimal number (a unit may
// follow: "24576 MiB", "35C"). nullopt for anything else ("N/A", "-").
std::optional<int64_t> reading(const json* v) {
  if (v == nullptr) return std::nullopt;
  double x = -1;
  if (v->is_number()) {
    x = v->get<double>();
  } else if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    size_t i = s.find_first_not_of(' ');
    if (i == std::string::npos || s[i] < '0' || s[i] > '9') return std::nullopt;
    double whole = 0, scale = 1, frac = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && whole <= kMaxValue) whole = whole * 10 + (s[i++] - '0');
    if (i < s.size() && s[i] == '.')
      for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) frac += (s[i] - '0') * (scale /= 10);
    if (i < s.size() && s[i] >= '0' && s[i] <= '9') return std::nullopt;  // Too many digits.
    x = whole + frac;
  }
  if (!std::isfinite(x) || x < 0 || x > kMaxValue) return std::nullopt;
  return std::llround(x);
}

// "0000", "3b": a PCI address part, as a string of hex digits or a number.
std::optional<std::string> pci_part(const json* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() <= 0xFFFF) return std::to_string(v->get<uint64_t>());
  if (!v->is_string()) return std::nullopt;
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty() || s.size() > 8 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); }))
    return std::nullopt;
  return s;
}

std::string bus_id(const json& card) {
  const json* pci = member(card, "PCI");
  if (pci == nullptr) return "";
  auto domain = pci_part(member(*pci, "DomainID"));
  auto bus = pci_part(member(*pci, "Bus"));
  auto device = pci_part(member(*pci, "Device"));
  auto function = pci_part(member(*pci, "Function"));
  if (!domain || !bus || !device || !function) return "";
  return *domain + ":" + *bus + ":" + *device + "." + *function;
}

Result<api::Device> read_card(const json& card, const std::string& where) {
  if (!card.is_object()) return Error{where + ": must be an object"};
  auto index = json_card_index(member(card, "CardNum"), where + ".CardNum");
  if (!index) return index.error();
  api::Device d;
  d.index = d.module_id = *index;
  auto model = json_text(member(card, "ProductName"), where + ".ProductName", kMaxText);
  if (!model) return model.error();
  auto uuid = json_text(member(card, "UUID"), where + ".UUID", kMaxLongText);
  if (!uuid) return uuid.error();
  d.model = *model;
  d.uuid = *uuid;
  d.bus_id = bus_id(card);
  if (const json* mem = member(card, "PhysicalMemUsage")) {
    d.memory_total_mib = reading(member(*mem, "Total"));
    d.memory_used_mib = reading(member(*mem, "Used"));
  }
  if (const json* t = member(card, "Temperature")) d.temperature_c = reading(member(*t, "Chip"));
  if (const json* u = member(card, "Utilization")) d.utilization_pct = reading(member(*u, "MLUAverage"));
  return d;
}

}  // namespace

const std::vector<std::string>& info_args() {
  static const std::vector<std::string> args = {"info", "-e", "-m", "-u", "-j"};
  return args;
}

Result<smi::ParsedDevices> parse_cnmon_info(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"cnmon: not JSON"};
  const json* list = member(doc, "CnmonInfo");
  if (list == nullptr) return Error{"cnmon: expected {\"CnmonInfo\": [...]}"};
  auto devices = json_device_list(*list, "cnmon", "CnmonInfo", "CardNum", read_card);
  if (!devices) return devices.error();
  smi::ParsedDevices out;
  out.devices = std::move(*devices);
  return out;
}

}  // namespace tessel::agent::cambricon
