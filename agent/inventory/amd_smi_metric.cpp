#include "tessel/agent/amd_smi_metric.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

#include <nlohmann/json.hpp>

namespace tessel::agent::amd {

using nlohmann::json;

namespace {

constexpr size_t kMaxGpus = 64;  // What the inventory's wire format carries.
constexpr double kMaxReading = 1e9;

// `obj[group][key]` when both exist; nullptr otherwise (a group amd-smi could not read
// is the string "N/A", not an object).
const json* member(const json& obj, const char* group, const char* key) {
  auto g = obj.find(group);
  if (g == obj.end() || !g->is_object()) return nullptr;
  auto v = g->find(key);
  return v == g->end() ? nullptr : &*v;
}

bool unit_is(const json& reading, std::initializer_list<const char*> units) {
  auto u = reading.find("unit");
  if (u == reading.end()) return true;  // Older releases print bare values.
  if (!u->is_string()) return false;
  return std::any_of(units.begin(), units.end(), [&](const char* want) { return *u == want; });
}

// A reading in one of `units`, rounded; nullopt for N/A and anything unreadable.
std::optional<int64_t> reading(const json* v, std::initializer_list<const char*> units) {
  if (v == nullptr) return std::nullopt;
  const json* number = v;
  if (v->is_object()) {
    auto value = v->find("value");
    if (value == v->end() || !unit_is(*v, units)) return std::nullopt;
    number = &*value;
  }
  if (!number->is_number()) return std::nullopt;  // "N/A", null, a list.
  const double x = number->get<double>();
  if (!std::isfinite(x) || x < 0 || x > kMaxReading) return std::nullopt;
  return std::llround(x);
}

// The first of `keys` in `group` that holds a reading.
std::optional<int64_t> first_reading(const json& gpu, const char* group, std::initializer_list<const char*> keys,
                                     std::initializer_list<const char*> units) {
  for (const char* key : keys)
    if (auto r = reading(member(gpu, group, key), units)) return r;
  return std::nullopt;
}

Result<smi::Telemetry> read_gpu(const json& gpu, const std::string& where) {
  if (!gpu.is_object()) return Error{where + ": must be an object"};
  auto g = gpu.find("gpu");
  if (g == gpu.end() || !g->is_number_integer() || g->get<int64_t>() < 0 || g->get<int64_t>() > 1023)
    return Error{where + ".gpu: must be an integer 0..1023"};
  smi::Telemetry t;
  t.index = static_cast<int>(g->get<int64_t>());
  t.utilization_pct = first_reading(gpu, "usage", {"gfx_activity"}, {"%"});
  t.power_w = first_reading(gpu, "power", {"socket_power", "average_socket_power"}, {"W"});
  t.temperature_c = first_reading(gpu, "temperature", {"hotspot", "edge"}, {"C"});
  t.memory_used_mib = first_reading(gpu, "mem_usage", {"used_vram"}, {"MB", "MiB"});
  return t;
}

}  // namespace

const std::vector<std::string>& metric_args() {
  static const std::vector<std::string> args = {"metric",        "--usage",     "--power",
                                                "--temperature", "--mem-usage", "--json"};
  return args;
}

Result<std::vector<smi::Telemetry>> parse_amd_smi_metric(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"amd-smi metric: not JSON"};
  const json* gpus = &doc;
  std::string name;
  if (doc.is_object() && doc.contains("gpu_data")) {
    gpus = &doc["gpu_data"];
    name = "gpu_data";
  }
  if (!gpus->is_array()) return Error{"amd-smi metric: expected a JSON list of GPUs or {\"gpu_data\": [...]}"};
  if (gpus->size() > kMaxGpus) return Error{"amd-smi metric: more than " + std::to_string(kMaxGpus) + " GPUs"};
  std::vector<smi::Telemetry> out;
  std::set<int> seen;
  for (size_t i = 0; i < gpus->size(); ++i) {
    auto t = read_gpu((*gpus)[i], "amd-smi metric " + name + "[" + std::to_string(i) + "]");
    if (!t) return t.error();
    if (!seen.insert(t->index).second) return Error{"amd-smi metric: duplicate gpu " + std::to_string(t->index)};
    out.push_back(*t);
  }
  std::sort(out.begin(), out.end(), [](const smi::Telemetry& a, const smi::Telemetry& b) { return a.index < b.index; });
  return out;
}

}  // namespace tessel::agent::amd
