#include "tessel/agent/amd_smi_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::amd {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxLongText = 128;
constexpr size_t kMaxGpus = 64;  // What the inventory's wire format carries.

// `obj[group][key]` when both exist; nullptr otherwise.
const json* member(const json& obj, const char* group, const char* key) {
  auto g = obj.find(group);
  if (g == obj.end() || !g->is_object()) return nullptr;
  auto v = g->find(key);
  return v == g->end() ? nullptr : &*v;
}

// A text reading: absent or "N/A" -> "". Errors on a non-string or unprintable value.
Result<std::string> text(const json& gpu, const char* group, const char* key, size_t max_len,
                         const std::string& where) {
  const json* v = member(gpu, group, key);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return Error{where + "." + group + "." + key + ": must be a string"};
  std::string s = v->get<std::string>();
  if (s == "N/A") return std::string();
  if (s.size() > max_len || !printable_ascii(s))
    return Error{where + "." + group + "." + key + ": must be printable ASCII of at most " + std::to_string(max_len) +
                 " bytes"};
  return s;
}

// vram.size: {"value": N, "unit": "MB"}, a bare number (MB), or "N/A".
Result<std::optional<int64_t>> vram_mib(const json& gpu, const std::string& where) {
  const json* v = member(gpu, "vram", "size");
  if (!v || (v->is_string() && v->get<std::string>() == "N/A")) return std::optional<int64_t>();
  const json* number = v;
  if (v->is_object()) {
    auto unit = v->find("unit");
    if (unit == v->end() || !unit->is_string() || (*unit != "MB" && *unit != "MiB"))
      return Error{where + ".vram.size.unit: must be \"MB\""};
    auto value = v->find("value");
    if (value == v->end()) return Error{where + ".vram.size.value: missing"};
    number = &*value;
    if (number->is_string() && number->get<std::string>() == "N/A") return std::optional<int64_t>();
  }
  if (!number->is_number() || number->get<double>() < 0 || number->get<double>() > 1e9)
    return Error{where + ".vram.size: must be a number of MB"};
  return std::optional<int64_t>(std::llround(number->get<double>()));
}

Result<int> gpu_index(const json& gpu, const std::string& where) {
  auto g = gpu.find("gpu");
  if (g == gpu.end() || !g->is_number_integer() || g->get<int64_t>() < 0 || g->get<int64_t>() > 1023)
    return Error{where + ".gpu: must be an integer 0..1023"};
  return static_cast<int>(g->get<int64_t>());
}

Result<api::Device> read_gpu(const json& gpu, const std::string& where) {
  if (!gpu.is_object()) return Error{where + ": must be an object"};
  api::Device d;
  auto index = gpu_index(gpu, where);
  if (!index) return index.error();
  d.index = d.module_id = *index;
  auto model = text(gpu, "asic", "market_name", kMaxText, where);
  if (!model) return model.error();
  auto serial = text(gpu, "asic", "asic_serial", kMaxLongText, where);
  if (!serial) return serial.error();
  auto bdf = text(gpu, "bus", "bdf", kMaxText, where);
  if (!bdf) return bdf.error();
  auto vram = vram_mib(gpu, where);
  if (!vram) return vram.error();
  d.model = *model;
  d.serial = *serial;
  d.uuid = rocr_uuid(d.serial);
  d.bus_id = *bdf;
  d.memory_total_mib = *vram;
  return d;
}

// The driver version of one GPU entry, cut to what the wire allows; "" when absent.
std::string driver_version(const json& gpu) {
  const json* v = member(gpu, "driver", "version");
  if (!v || !v->is_string()) return "";
  std::string s = v->get<std::string>();
  if (s == "N/A" || !printable_ascii(s)) return "";
  return s.substr(0, kMaxLongText);
}

// The list of GPU entries in either shape and its name for messages; nullptr when
// the document is neither.
const json* gpu_list(const json& doc, std::string& name) {
  name = "";
  if (doc.is_array()) return &doc;
  if (!doc.is_object()) return nullptr;
  auto it = doc.find("gpu_data");
  if (it == doc.end() || !it->is_array()) return nullptr;
  name = "gpu_data";
  return &*it;
}

}  // namespace

const std::vector<std::string>& static_args() {
  static const std::vector<std::string> args = {"static", "--asic", "--bus", "--vram", "--driver", "--json"};
  return args;
}

std::string rocr_uuid(std::string_view asic_serial) {
  std::string_view hex = asic_serial;
  if (hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (hex.empty() || hex.size() > 16) return "";
  std::string out = "GPU-";
  bool nonzero = false;
  for (char c : hex) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    nonzero |= c != '0';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return nonzero ? out : "";
}

Result<smi::ParsedDevices> parse_amd_smi_static(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"amd-smi: not JSON"};
  std::string name;
  const json* gpus = gpu_list(doc, name);
  if (!gpus) return Error{"amd-smi: expected a JSON list of GPUs or {\"gpu_data\": [...]}"};
  if (gpus->size() > kMaxGpus) return Error{"amd-smi: more than " + std::to_string(kMaxGpus) + " GPUs"};
  smi::ParsedDevices out;
  std::set<int> seen;
  for (size_t i = 0; i < gpus->size(); ++i) {
    auto d = read_gpu((*gpus)[i], "amd-smi " + name + "[" + std::to_string(i) + "]");
    if (!d) return d.error();
    if (!seen.insert(d->index).second) return Error{"amd-smi: duplicate gpu " + std::to_string(d->index)};
    if (out.driver_version.empty()) out.driver_version = driver_version((*gpus)[i]);
    out.devices.push_back(std::move(*d));
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return out;
}

}  // namespace tessel::agent::amd
