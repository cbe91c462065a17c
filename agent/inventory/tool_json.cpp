#include "tessel/agent/tool_json.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent {

Result<std::string> json_text(const nlohmann::json* v, const std::string& where, size_t max_len) {
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return Error{where + ": must be a string"};
  std::string s = v->get<std::string>();
  if (s.size() > max_len || !printable_ascii(s))
    return Error{where + ": must be printable ASCII of at most " + std::to_string(max_len) + " bytes"};
  return s;
}

Result<int> json_card_index(const nlohmann::json* v, const std::string& where) {
  const std::string msg = where + ": must be an integer 0..1023";
  if (v != nullptr && v->is_number_integer()) {
    const auto x = v->get<int64_t>();
    if (x < 0 || x > 1023) return Error{msg};
    return static_cast<int>(x);
  }
  if (v == nullptr || !v->is_string()) return Error{msg};
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return Error{msg};
  const int x = std::stoi(s);
  if (x > 1023) return Error{msg};
  return x;
}

Result<std::vector<api::Device>> json_device_list(const nlohmann::json& list, std::string_view tool,
                                                  std::string_view list_name, std::string_view index_field,
                                                  const JsonDeviceReader& read) {
  constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.
  const std::string name(tool);
  if (!list.is_array()) return Error{name + " " + std::string(list_name) + ": must be a list"};
  if (list.size() > kMaxDevices) return Error{name + ": more than " + std::to_string(kMaxDevices) + " devices"};
  std::vector<api::Device> devices;
  std::set<int> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    auto d = read(list[i], name + " " + std::string(list_name) + "[" + std::to_string(i) + "]");
    if (!d) return d.error();
    if (!seen.insert(d->index).second)
      return Error{name + ": duplicate " + std::string(index_field) + " " + std::to_string(d->index)};
    devices.push_back(std::move(*d));
  }
  std::sort(devices.begin(), devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return devices;
}

}  // namespace tessel::agent
