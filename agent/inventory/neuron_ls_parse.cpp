#include "tessel/agent/neuron_ls_parse.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::neuron {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = 64;
constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.
constexpr int64_t kMaxCores = 64;   // Per device; Trn2 has 8 physical NeuronCores.

Result<std::string> text(const json& dev, const char* key, const std::string& where) {
  auto v = dev.find(key);
  if (v == dev.end() || v->is_null()) return std::string();
  if (!v->is_string()) return Error{where + "." + key + ": must be a string"};
  std::string s = v->get<std::string>();
  if (s.size() > kMaxText || !printable_ascii(s))
    return Error{where + "." + key + ": must be printable ASCII of at most " + std::to_string(kMaxText) + " bytes"};
  return s;
}

bool small_int(const json& v, int64_t min, int64_t max) {
  return v.is_number_integer() && v.get<int64_t>() >= min && v.get<int64_t>() <= max;
}

// The device's NeuronCore count, checked against the global ids it must hold.
Result<int> core_count(const json& dev, int index, const std::string& where) {
  auto ids = dev.find("neuroncore_ids");
  if (ids == dev.end() || ids->is_null()) {
    auto nc = dev.find("nc_count");
    if (nc == dev.end() || !small_int(*nc, 1, kMaxCores))
      return Error{where + ".nc_count: must be an integer 1.." + std::to_string(kMaxCores)};
    return static_cast<int>(nc->get<int64_t>());
  }
  if (!ids->is_array() || ids->empty() || static_cast<int64_t>(ids->size()) > kMaxCores)
    return Error{where + ".neuroncore_ids: must be a list of 1.." + std::to_string(kMaxCores) + " core ids"};
  const int c = static_cast<int>(ids->size());
  const int64_t first = static_cast<int64_t>(index) * c;
  for (size_t k = 0; k < ids->size(); ++k) {
    if (!(*ids)[k].is_number_integer() || (*ids)[k].get<int64_t>() != first + static_cast<int64_t>(k))
      return Error{where + ".neuroncore_ids: must be " + std::to_string(first) + ".." + std::to_string(first + c - 1) +
                   " (device " + std::to_string(index) + " of " + std::to_string(c) + " cores)"};
  }
  return c;
}

Result<api::Device> read_device(const json& dev, const std::string& where) {
  if (!dev.is_object()) return Error{where + ": must be an object"};
  auto id = dev.find("neuron_device");
  if (id == dev.end() || !small_int(*id, 0, 1023)) return Error{where + ".neuron_device: must be an integer 0..1023"};
  api::Device d;
  d.index = d.module_id = static_cast<int>(id->get<int64_t>());
  auto cores = core_count(dev, d.index, where);
  if (!cores) return cores.error();
  d.cores = *cores;
  auto bdf = text(dev, "bdf", where);
  if (!bdf) return bdf.error();
  d.bus_id = *bdf;
  if (!d.bus_id.empty()) {
    d.uuid = "NEURON-";
    for (char c : d.bus_id) d.uuid += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  auto instance = text(dev, "instance_type", where);
  if (!instance) return instance.error();
  d.model = instance->substr(0, instance->find('.'));
  auto mem = dev.find("memory_size");
  if (mem != dev.end() && !mem->is_null()) {
    if (!small_int(*mem, 0, int64_t{1} << 50)) return Error{where + ".memory_size: must be a number of bytes"};
    d.memory_total_mib = mem->get<int64_t>() / (int64_t{1024} * 1024);
  }
  return d;
}

}  // namespace

const std::vector<std::string>& list_args() {
  static const std::vector<std::string> args = {"-j"};
  return args;
}

Result<smi::ParsedDevices> parse_neuron_ls(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"neuron-ls: not JSON"};
  if (!doc.is_array()) return Error{"neuron-ls: expected a JSON list of devices"};
  if (doc.size() > kMaxDevices) return Error{"neuron-ls: more than " + std::to_string(kMaxDevices) + " devices"};
  smi::ParsedDevices out;
  std::set<int> seen;
  for (size_t i = 0; i < doc.size(); ++i) {
    auto d = read_device(doc[i], "neuron-ls [" + std::to_string(i) + "]");
    if (!d) return d.error();
    if (!seen.insert(d->index).second) return Error{"neuron-ls: duplicate neuron_device " + std::to_string(d->index)};
    out.devices.push_back(std::move(*d));
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return out;
}

}  // namespace tessel::agent::neuron
