#include "tessel/agent/smi_dialect.hpp"

namespace tessel::agent::smi {

const Field* Dialect::find(std::string_view name) const {
  for (const Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

const Field* Dialect::field_for(Role role) const {
  for (const Field& f : fields)
    if (f.role == role) return &f;
  return nullptr;
}

static std::vector<std::string> names(const std::vector<Field>& fields) {
  std::vector<std::string> out;
  out.reserve(fields.size());
  for (const Field& f : fields) out.push_back(f.name);
  return out;
}

const Dialect& hl_smi_dialect() {
  static const Dialect d = [] {
    Dialect x{"hl-smi", api::Vendor::habana, {}, {}};
    x.fields = {
        {"index", "", Role::index},
        {"module_id", "", Role::module_id},
        {"bus_id", "", Role::bus_id},
        {"name", "", Role::model},
        {"serial", "", Role::serial},
        {"uuid", "", Role::uuid},
        {"driver_version", "", Role::driver_version},
        {"memory.total", "MiB", Role::memory_total},
        {"memory.used", "MiB", Role::memory_used},
        {"utilization.aip", "%", Role::utilization},
        {"temperature.aip", "C", Role::temperature},
        {"power.draw", "W", Role::power},
    };
    x.default_query = names(x.fields);
    return x;
  }();
  return d;
}

const Dialect& nvidia_smi_dialect() {
  static const Dialect d = [] {
    Dialect x{"nvidia-smi", api::Vendor::nvidia, {}, {}};
    // nvidia-smi prints temperature.gpu without a unit, even without nounits.
    x.fields = {
        {"index", "", Role::index},
        {"pci.bus_id", "", Role::bus_id},
        {"name", "", Role::model},
        {"serial", "", Role::serial},
        {"uuid", "", Role::uuid},
        {"driver_version", "", Role::driver_version},
        {"memory.total", "MiB", Role::memory_total},
        {"memory.used", "MiB", Role::memory_used},
        {"utilization.gpu", "%", Role::utilization},
        {"temperature.gpu", "", Role::temperature},
        {"power.draw", "W", Role::power},
    };
    x.default_query = names(x.fields);
    return x;
  }();
  return d;
}

std::string join_fields(const std::vector<std::string>& fields) {
  std::string out;
  for (const std::string& f : fields) {
    if (!out.empty()) out += ',';
    out += f;
  }
  return out;
}

}  // namespace tessel::agent::smi
