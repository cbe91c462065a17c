#include "tessel/api/inventory.hpp"

#include <nlohmann/json.hpp>

#include "tessel/api/json_fields.hpp"
#include "tessel/api/topology.hpp"

#include <set>

namespace tessel::api {

using nlohmann::json;

std::string to_string(Vendor v) {
  switch (v) {
    case Vendor::habana: return "habana";
    case Vendor::nvidia: return "nvidia";
    case Vendor::amd: return "amd";
    case Vendor::intel: return "intel";
    case Vendor::ascend: return "ascend";
    case Vendor::neuron: return "neuron";
    case Vendor::tpu: return "tpu";
    case Vendor::cambricon: return "cambricon";
    case Vendor::mthreads: return "mthreads";
  }
  return "unknown";
}

const std::vector<Vendor>& supported_vendors() {
  static const std::vector<Vendor> vendors = {Vendor::habana, Vendor::nvidia, Vendor::amd,
                                              Vendor::intel,  Vendor::ascend, Vendor::neuron};
  return vendors;
}

std::string supported_vendor_names() {
  std::string out;
  for (Vendor v : supported_vendors()) out += (out.empty() ? "" : ", ") + to_string(v);
  return out;
}

Result<Vendor> parse_vendor(const std::string& s) {
  for (Vendor v : supported_vendors())
    if (s == to_string(v)) return v;
  return Error::invalid("unknown vendor '" + s + "' (want one of " + supported_vendor_names() + ")");
}

static json optional_int(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

json to_json(const Device& d) {
  json j = {{"index", d.index},
            {"module_id", d.module_id},
            {"bus_id", d.bus_id},
            {"model", d.model},
            {"serial", d.serial},
            {"uuid", d.uuid},
            {"memory_total_mib", optional_int(d.memory_total_mib)},
            {"memory_used_mib", optional_int(d.memory_used_mib)},
            {"utilization_pct", optional_int(d.utilization_pct)},
            {"temperature_c", optional_int(d.temperature_c)},
            {"power_w", optional_int(d.power_w)},
            {"healthy", d.healthy}};
  if (!d.healthy) j["health_reason"] = d.health_reason;
  if (d.cores > 0) j["cores"] = d.cores;
  return j;
}

json to_json(const NodeInventory& inv) {
  json devices = json::array();
  for (const Device& d : inv.devices) devices.push_back(to_json(d));
  json groups = json::object();
  if (any_subset_is_valid(inv.vendor)) {
    groups["all"] = true;
  } else {
    for (const auto& [size, list] : groups_within(inv.vendor, healthy_module_ids(inv)))
      groups[std::to_string(size)] = list;
  }
  return {{"vendor", to_string(inv.vendor)},
          {"driver_version", inv.driver_version},
          {"devices", devices},
          {"groups", groups}};
}

static Result<Device> device_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return Error::invalid(where + ": must be an object", where);
  FieldReader r(j, where);
  Device d;
  r.required_int("index", d.index, 0, 1023);
  r.required_int("module_id", d.module_id, 0, 1023);
  r.optional_string("bus_id", d.bus_id, 64);
  r.required_string("model", d.model, 64);
  r.optional_string("serial", d.serial, 128);
  r.optional_string("uuid", d.uuid, 128);
  r.nullable_int("memory_total_mib", d.memory_total_mib);
  r.nullable_int("memory_used_mib", d.memory_used_mib);
  r.nullable_int("utilization_pct", d.utilization_pct);
  r.nullable_int("temperature_c", d.temperature_c);
  r.nullable_int("power_w", d.power_w);
  r.optional_bool("healthy", d.healthy);
  r.optional_string("health_reason", d.health_reason, 512);
  r.optional_int("cores", d.cores, 0, 64);
  r.allow("groups");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  return d;
}

Result<NodeInventory> inventory_from_json(const json& j) {
  if (!j.is_object()) return Error::invalid("inventory: must be an object", "inventory");
  NodeInventory inv;
  FieldReader r(j, "inventory");
  std::string vendor;
  r.required_string("vendor", vendor, 16);
  r.optional_string("driver_version", inv.driver_version, 128);
  r.allow("groups");  // Derived; recomputed by whoever reads it.
  r.allow("devices");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  auto v = parse_vendor(vendor);
  if (!v) return Error::invalid("inventory.vendor: " + v.error().message, "inventory.vendor");
  inv.vendor = *v;
  if (!j.contains("devices") || !j["devices"].is_array())
    return Error::invalid("inventory.devices: must be an array", "inventory.devices");
  if (j["devices"].size() > 64) return Error::invalid("inventory.devices: more than 64 devices", "inventory.devices");
  std::set<int> seen_index, seen_module;
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    auto d = device_from_json(j["devices"][i], "inventory.devices[" + std::to_string(i) + "]");
    if (!d) return d.error();
    const std::string where = "inventory.devices[" + std::to_string(i) + "]";
    if (!seen_index.insert(d->index).second)
      return Error::invalid(where + ".index: duplicate " + std::to_string(d->index), where + ".index");
    if (!seen_module.insert(d->module_id).second)
      return Error::invalid(where + ".module_id: duplicate " + std::to_string(d->module_id), where + ".module_id");
    inv.devices.push_back(std::move(*d));
  }
  return inv;
}

}  // namespace tessel::api
