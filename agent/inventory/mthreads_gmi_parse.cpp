#include "tessel/agent/mthreads_gmi_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include <nlohmann/json.hpp>

#include "tessel/agent/tool_json.hpp"

namespace tessel::agent::mthreads {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxLongText = 128;
constexpr double kMaxValue = 1e12;  // Far above any real reading; keeps int64 safe.

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// `obj[key]`, matching keys after trimming spaces ("Power Draw " is printed with one).
const json* member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (trim(it.key()) == key) return &it.value();
  return nullptr;
}

const json* member(const json& obj, std::string_view outer, std::string_view inner) {
  const json* o = member(obj, outer);
  return o ? member(*o, inner) : nullptr;
}

// "96.66W" -> 96.66 with unit "W": a non-negative decimal number, optional spaces, then
// exactly `unit` (case-insensitive). nullopt for anything else ("N/A", a bare word).
std::optional<double> number_with_unit(const json* v, std::string_view unit) {
  if (v == nullptr) return std::nullopt;
  if (v->is_number()) {
    double x = v->get<double>();
    return std::isfinite(x) && x >= 0 && x <= kMaxValue ? std::optional<double>(x) : std::nullopt;
  }
  if (!v->is_string()) return std::nullopt;
  const std::string& s = v->get_ref<const std::string&>();
  std::string_view rest = trim(s);
  size_t i = 0;
  double whole = 0, scale = 1, frac = 0;
  bool digits = false;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9' && whole <= kMaxValue) {
    whole = whole * 10 + (rest[i++] - '0');
    digits = true;
  }
  if (i < rest.size() && rest[i] == '.') {
    ++i;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      scale /= 10;
      frac += (rest[i++] - '0') * scale;
      digits = true;
    }
  }
  if (!digits || whole > kMaxValue) return std::nullopt;
  std::string_view suffix = trim(rest.substr(i));
  if (suffix.size() != unit.size() || !std::equal(suffix.begin(), suffix.end(), unit.begin(),
                                                  [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
    return std::nullopt;
  return whole + frac;
}

std::optional<int64_t> rounded(std::optional<double> x) {
  return x ? std::optional<int64_t>(std::llround(*x)) : std::nullopt;
}

std::optional<int64_t> mebibytes(const json* v) {
  if (auto mib = number_with_unit(v, "MiB")) return std::llround(*mib);
  if (auto gib = number_with_unit(v, "GiB")) return std::llround(*gib * 1024);
  return std::nullopt;
}

Result<api::Device> read_device(const json& gpu, const std::string& where) {
  if (!gpu.is_object()) return Error{where + ": must be an object"};
  auto index = json_card_index(member(gpu, "Index"), where + ".Index");
  if (!index) return index.error();
  api::Device d;
  d.index = d.module_id = *index;
  auto model = json_text(member(gpu, "Product Name"), where + ".Product Name", kMaxText);
  if (!model) return model.error();
  auto uuid = json_text(member(gpu, "GPU UUID"), where + ".GPU UUID", kMaxLongText);
  if (!uuid) return uuid.error();
  auto serial = json_text(member(gpu, "Serial Number"), where + ".Serial Number", kMaxLongText);
  if (!serial) return serial.error();
  auto bus = json_text(member(gpu, "PCI", "Bus ID"), where + ".PCI.Bus ID", kMaxText);
  if (!bus) return bus.error();
  d.model = *model;
  d.uuid = *uuid;
  d.serial = *serial;
  d.bus_id = *bus;
  d.memory_total_mib = mebibytes(member(gpu, "FB Memory Usage", "Total"));
  d.memory_used_mib = mebibytes(member(gpu, "FB Memory Usage", "Used"));
  d.utilization_pct = rounded(number_with_unit(member(gpu, "Utilization", "Gpu"), "%"));
  d.temperature_c = rounded(number_with_unit(member(gpu, "Temperature", "GPU Current Temp"), "C"));
  d.power_w = rounded(number_with_unit(member(gpu, "Power Readings", "Power Draw"), "W"));
  return d;
}

bool attached_none(const json& doc) {
  const json* n = member(doc, "Attached GPUs");
  return n != nullptr && ((n->is_string() && *n == "0") || (n->is_number_integer() && *n == 0));
}

}  // namespace

const std::vector<std::string>& query_args() {
  static const std::vector<std::string> args = {"-q", "-j"};
  return args;
}

Result<smi::ParsedDevices> parse_mthreads_gmi_query(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"mthreads-gmi: not JSON"};
  if (!doc.is_object()) return Error{"mthreads-gmi: expected {\"GPU\": [...]}"};
  smi::ParsedDevices out;
  auto driver = json_text(member(doc, "Driver Version"), "mthreads-gmi Driver Version", kMaxLongText);
  if (!driver) return driver.error();
  out.driver_version = *driver;
  const json* list = member(doc, "GPU");
  if (list == nullptr) {
    if (attached_none(doc)) return out;
    return Error{"mthreads-gmi: expected {\"GPU\": [...]}"};
  }
  auto devices = json_device_list(*list, "mthreads-gmi", "GPU", "Index", read_device);
  if (!devices) return devices.error();
  out.devices = std::move(*devices);
  return out;
}

}  // namespace tessel::agent::mthreads
