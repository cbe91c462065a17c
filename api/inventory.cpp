#include "tessel/api/inventory.hpp"

#include <nlohmann/json.hpp>

#include "tessel/api/json_fields.hpp"
#include "tessel/api/reserved_labels.hpp"
#include "tessel/api/topology.hpp"

#include <algorithm>
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
  static const std::vector<Vendor> vendors = {Vendor::habana, Vendor::nvidia,    Vendor::amd,
                                              Vendor::intel,  Vendor::ascend,    Vendor::neuron,
                                              Vendor::tpu,    Vendor::cambricon, Vendor::mthreads};
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

// The most cards one inventory (or one heartbeat's readings) may list.
static constexpr size_t kMaxInventoryDevices = 64;

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
  if (!d.firmware_version.empty()) j["firmware_version"] = d.firmware_version;
  if (d.ports_total) {
    j["ports_total"] = *d.ports_total;
    j["ports_up"] = d.ports_up.value_or(0);
    j["ports_down"] = d.ports_down;
  }
  if (d.cores > 0) j["cores"] = d.cores;
  if (d.numa_node) j["numa_node"] = *d.numa_node;
  return j;
}

json to_json(const NodeInventory& inv) {
  json devices = json::array();
  for (const Device& d : inv.devices) devices.push_back(to_json(d));
  json groups = json::object();
  if (any_subset_is_valid(inv.vendor)) {
    groups["all"] = true;
  } else {
    for (const auto& [size, list] : groups_within(group_rule(inv), healthy_module_ids(inv)))
      groups[std::to_string(size)] = list;
  }
  json out = {{"vendor", to_string(inv.vendor)},
              {"driver_version", inv.driver_version},
              {"devices", devices},
              {"groups", groups}};
  if (!inv.ports_error.empty()) out["ports_error"] = inv.ports_error;
  if (inv.cpus > 0) out["cpus"] = inv.cpus;
  if (inv.memory_mib > 0) out["memory_mib"] = inv.memory_mib;
  if (!inv.numa.empty()) {
    json numa = json::array();
    for (const NumaNode& n : inv.numa) numa.push_back({{"id", n.id}, {"cpus", format_cpu_list(n.cpus)}});
    out["numa"] = std::move(numa);
  }
  if (!inv.isolation.empty()) out["isolation"] = inv.isolation;
  if (!inv.containers.empty()) out["containers"] = inv.containers;
  if (!inv.labels.empty()) out["labels"] = inv.labels;
  return out;
}

std::string modules_with_ports_down(const NodeInventory& inv) {
  std::vector<int> modules;
  for (const Device& d : inv.devices)
    if (!d.ports_down.empty()) modules.push_back(d.module_id);
  if (modules.empty()) return "";
  std::string out = modules.size() == 1 ? "module " : "modules ";
  for (size_t i = 0; i < modules.size(); ++i) out += (i ? ", " : "") + std::to_string(modules[i]);
  return out;
}

bool driver_version_matches(const std::string& want, const std::string& have) {
  if (want.empty() || want == have) return true;
  if (have.size() <= want.size() || have.compare(0, want.size(), want) != 0) return false;
  const char next = have[want.size()];
  return next == '.' || next == '-';
}

// NUMA node ids (the kernel's MAX_NUMNODES is at most 1024) and how many an inventory lists.
static constexpr int kMaxNumaId = 1023;
static constexpr size_t kMaxNumaNodes = 1024;
// The most memory a node may report: 1 PiB.
static constexpr int64_t kMaxNodeMemoryMib = int64_t{1} << 30;

// Port numbers: a card has at most a few dozen NIC ports.
static constexpr int kMaxPorts = 256;

static Status read_ports(const json& j, const std::string& where, Device& d) {
  const bool any = j.contains("ports_total") || j.contains("ports_up") || j.contains("ports_down");
  if (!any) return ok_status();
  auto count = [&](const char* key) -> Result<int> {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0 ||
        j[key].get<int64_t>() > kMaxPorts)
      return Error::invalid(where + "." + key + ": must be an integer 0-" + std::to_string(kMaxPorts),
                            where + "." + key);
    return static_cast<int>(j[key].get<int64_t>());
  };
  auto total = count("ports_total");
  if (!total) return total.error();
  auto up = count("ports_up");
  if (!up) return up.error();
  if (*up > *total) return Error::invalid(where + ".ports_up: more than ports_total", where + ".ports_up");
  const std::string down_at = where + ".ports_down";
  if (!j.contains("ports_down") || !j["ports_down"].is_array() || j["ports_down"].size() > static_cast<size_t>(*total))
    return Error::invalid(down_at + ": must be an array of at most ports_total port numbers", down_at);
  for (const json& p : j["ports_down"]) {
    if (!p.is_number_integer() || p.get<int64_t>() < 0 || p.get<int64_t>() >= kMaxPorts)
      return Error::invalid(down_at + ": port numbers are integers 0-" + std::to_string(kMaxPorts - 1), down_at);
    d.ports_down.push_back(static_cast<int>(p.get<int64_t>()));
  }
  d.ports_total = *total;
  d.ports_up = *up;
  return ok_status();
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
  r.optional_string("firmware_version", d.firmware_version, 128);
  r.optional_int("cores", d.cores, 0, 64);
  std::optional<int64_t> numa_node;
  r.optional_int("numa_node", numa_node, 0, kMaxNumaId);
  if (numa_node) d.numa_node = static_cast<int>(*numa_node);
  r.allow("groups");
  r.allow("ports_total");
  r.allow("ports_up");
  r.allow("ports_down");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  if (Status st = read_ports(j, where, d); !st) return st.error();
  return d;
}

// A card's readings, and setting them: the one place that lists which fields they are.
static DeviceReading reading_of(const Device& d) {
  return {d.index, d.memory_used_mib, d.utilization_pct, d.temperature_c, d.power_w};
}
static void set_reading(Device& d, const DeviceReading& r) {
  d.memory_used_mib = r.memory_used_mib;
  d.utilization_pct = r.utilization_pct;
  d.temperature_c = r.temperature_c;
  d.power_w = r.power_w;
}

std::vector<DeviceReading> readings_of(const NodeInventory& inv) {
  std::vector<DeviceReading> out;
  out.reserve(inv.devices.size());
  for (const Device& d : inv.devices) out.push_back(reading_of(d));
  return out;
}

bool same_but_readings(const NodeInventory& a, const NodeInventory& b) {
  if (a.vendor != b.vendor || a.driver_version != b.driver_version || a.ports_error != b.ports_error ||
      a.cpus != b.cpus || a.memory_mib != b.memory_mib || a.numa != b.numa || a.isolation != b.isolation ||
      a.containers != b.containers || a.devices.size() != b.devices.size())
    return false;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    Device x = a.devices[i];  // a's card with b's readings.
    set_reading(x, reading_of(b.devices[i]));
    if (!(x == b.devices[i])) return false;
  }
  return true;
}

Status apply_readings(NodeInventory& inv, const std::vector<DeviceReading>& readings) {
  if (readings.size() != inv.devices.size())
    return Error::invalid("readings: " + std::to_string(readings.size()) + " cards, the node's inventory has " +
                              std::to_string(inv.devices.size()),
                          "readings");
  for (size_t i = 0; i < readings.size(); ++i)
    if (readings[i].index != inv.devices[i].index) {
      const std::string where = "readings[" + std::to_string(i) + "].index";
      return Error::invalid(where + ": " + std::to_string(readings[i].index) + ", the inventory's card " +
                                std::to_string(i) + " is " + std::to_string(inv.devices[i].index),
                            where);
    }
  for (size_t i = 0; i < readings.size(); ++i) set_reading(inv.devices[i], readings[i]);
  return ok_status();
}

json to_json(const DeviceReading& r) {
  return {{"index", r.index},
          {"memory_used_mib", optional_int(r.memory_used_mib)},
          {"utilization_pct", optional_int(r.utilization_pct)},
          {"temperature_c", optional_int(r.temperature_c)},
          {"power_w", optional_int(r.power_w)}};
}

Result<std::vector<DeviceReading>> readings_from_json(const json& j) {
  if (!j.is_array()) return Error::invalid("readings: must be an array", "readings");
  if (j.size() > kMaxInventoryDevices)
    return Error::invalid("readings: more than " + std::to_string(kMaxInventoryDevices) + " cards", "readings");
  std::vector<DeviceReading> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = "readings[" + std::to_string(i) + "]";
    if (!j[i].is_object()) return Error::invalid(where + ": must be an object", where);
    FieldReader r(j[i], where);
    DeviceReading d;
    r.required_int("index", d.index, 0, 1023);
    r.nullable_int("memory_used_mib", d.memory_used_mib);
    r.nullable_int("utilization_pct", d.utilization_pct);
    r.nullable_int("temperature_c", d.temperature_c);
    r.nullable_int("power_w", d.power_w);
    if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
    out.push_back(d);
  }
  return out;
}

// The inventory's "numa": [{"id": 0, "cpus": "0-15"}], ids ascending, CPUs on one node only.
static Result<std::vector<NumaNode>> numa_from_json(const json& j) {
  const std::string at = "inventory.numa";
  if (!j.is_array()) return Error::invalid(at + ": must be an array", at);
  if (j.size() > kMaxNumaNodes)
    return Error::invalid(at + ": more than " + std::to_string(kMaxNumaNodes) + " nodes", at);
  std::vector<NumaNode> out;
  std::set<int> seen_cpus;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = at + "[" + std::to_string(i) + "]";
    if (!j[i].is_object()) return Error::invalid(where + ": must be an object", where);
    FieldReader r(j[i], where);
    NumaNode n;
    std::string cpus;
    r.required_int("id", n.id, 0, kMaxNumaId);
    r.required_string("cpus", cpus, 4096);
    if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
    if (!out.empty() && n.id <= out.back().id)
      return Error::invalid(where + ".id: ids must be ascending and distinct", where + ".id");
    auto list = parse_cpu_list(cpus);
    if (!list) return Error::invalid(where + ".cpus: " + list.error().message, where + ".cpus");
    n.cpus = std::move(*list);
    for (int c : n.cpus)
      if (!seen_cpus.insert(c).second)
        return Error::invalid(where + ".cpus: CPU " + std::to_string(c) + " is on another node too", where + ".cpus");
    out.push_back(std::move(n));
  }
  return out;
}

Result<NodeInventory> inventory_from_json(const json& j) {
  if (!j.is_object()) return Error::invalid("inventory: must be an object", "inventory");
  NodeInventory inv;
  FieldReader r(j, "inventory");
  std::string vendor;
  r.required_string("vendor", vendor, 16);
  r.optional_string("driver_version", inv.driver_version, 128);
  r.optional_string("ports_error", inv.ports_error, 512);
  r.optional_int("cpus", inv.cpus, 0, kMaxCpuId + 1);
  std::optional<int64_t> memory;
  r.optional_int("memory_mib", memory, 0, kMaxNodeMemoryMib);
  inv.memory_mib = memory.value_or(0);
  r.optional_string("isolation", inv.isolation, 16);
  r.optional_string("containers", inv.containers, 128);
  r.allow("groups");  // Derived; recomputed by whoever reads it.
  r.allow("devices");
  r.allow("numa");
  r.allow("labels");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  if (j.contains("labels") && !j["labels"].is_null()) {
    auto labels = labels_from_json(j["labels"], "inventory.labels");
    if (!labels) return labels.error();
    if (auto st = check_unreserved_labels(*labels, "inventory.labels"); !st) return st.error();
    inv.labels = std::move(*labels);
  }
  if (!inv.isolation.empty() &&
      std::find(std::begin(kIsolationKinds), std::end(kIsolationKinds), inv.isolation) == std::end(kIsolationKinds))
    return Error::invalid("inventory.isolation: must be cgroup2, cgroup1 or none", "inventory.isolation");
  if (j.contains("numa") && !j["numa"].is_null()) {
    auto numa = numa_from_json(j["numa"]);
    if (!numa) return numa.error();
    inv.numa = std::move(*numa);
  }
  auto v = parse_vendor(vendor);
  if (!v) return Error::invalid("inventory.vendor: " + v.error().message, "inventory.vendor");
  inv.vendor = *v;
  if (!j.contains("devices") || !j["devices"].is_array())
    return Error::invalid("inventory.devices: must be an array", "inventory.devices");
  if (j["devices"].size() > kMaxInventoryDevices)
    return Error::invalid("inventory.devices: more than " + std::to_string(kMaxInventoryDevices) + " devices",
                          "inventory.devices");
  std::set<int> seen_index, seen_module;
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    const std::string where = "inventory.devices[" + std::to_string(i) + "]";
    auto d = device_from_json(j["devices"][i], where);
    if (!d) return d.error();
    if (!seen_index.insert(d->index).second)
      return Error::invalid(where + ".index: duplicate " + std::to_string(d->index), where + ".index");
    if (!seen_module.insert(d->module_id).second)
      return Error::invalid(where + ".module_id: duplicate " + std::to_string(d->module_id), where + ".module_id");
    inv.devices.push_back(std::move(*d));
  }
  return inv;
}

}  // namespace tessel::api
