#include "tessel/agent/xpu_smi_parse.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::intel {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxLongText = 128;
constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.

// A text field: absent or null -> "". Errors on a non-string or unprintable value.
Result<std::string> text(const json& dev, const char* key, size_t max_len, const std::string& where) {
  auto v = dev.find(key);
  if (v == dev.end() || v->is_null()) return std::string();
  if (!v->is_string()) return Error{where + "." + key + ": must be a string"};
  std::string s = v->get<std::string>();
  if (s.size() > max_len || !printable_ascii(s))
    return Error{where + "." + key + ": must be printable ASCII of at most " + std::to_string(max_len) + " bytes"};
  return s;
}

Result<api::Device> read_device(const json& dev, const std::string& where) {
  if (!dev.is_object()) return Error{where + ": must be an object"};
  auto id = dev.find("device_id");
  if (id == dev.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > 1023)
    return Error{where + ".device_id: must be an integer 0..1023"};
  api::Device d;
  d.index = d.module_id = static_cast<int>(id->get<int64_t>());
  auto name = text(dev, "device_name", kMaxText, where);
  if (!name) return name.error();
  auto bdf = text(dev, "pci_bdf_address", kMaxText, where);
  if (!bdf) return bdf.error();
  auto uuid = text(dev, "uuid", kMaxLongText, where);
  if (!uuid) return uuid.error();
  d.model = *name;
  d.bus_id = *bdf;
  d.uuid = *uuid;
  return d;
}

bool is_virtual_function(const json& dev) {
  auto t = dev.find("device_function_type");
  return t != dev.end() && t->is_string() && *t == "virtual";
}

}  // namespace

const std::vector<std::string>& discovery_args() {
  static const std::vector<std::string> args = {"discovery", "-j"};
  return args;
}

Result<smi::ParsedDevices> parse_xpu_smi_discovery(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"xpu-smi: not JSON"};
  if (!doc.is_object()) return Error{"xpu-smi: expected {\"device_list\": [...]}"};
  auto list = doc.find("device_list");
  if (list == doc.end()) {
    auto err = doc.find("error");
    if (err != doc.end() && err->is_string()) {
      std::string msg = err->get<std::string>().substr(0, 200);
      if (printable_ascii(msg)) return Error{"xpu-smi: " + msg};
    }
    return Error{"xpu-smi: expected {\"device_list\": [...]}"};
  }
  if (!list->is_array()) return Error{"xpu-smi device_list: must be a list"};
  if (list->size() > kMaxDevices) return Error{"xpu-smi: more than " + std::to_string(kMaxDevices) + " devices"};
  const bool any_physical =
      std::any_of(list->begin(), list->end(), [](const json& d) { return d.is_object() && !is_virtual_function(d); });
  smi::ParsedDevices out;
  std::set<int> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& dev = (*list)[i];
    auto d = read_device(dev, "xpu-smi device_list[" + std::to_string(i) + "]");
    if (!d) return d.error();
    if (!seen.insert(d->index).second) return Error{"xpu-smi: duplicate device_id " + std::to_string(d->index)};
    if (any_physical && is_virtual_function(dev)) continue;  // Whole cards only (header).
    out.devices.push_back(std::move(*d));
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return out;
}

}  // namespace tessel::agent::intel
