#include "tessel/cli/node_view.hpp"

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/cli/card_map.hpp"
#include "tessel/cli/duration.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {

const json& devices_of(const json& node) { return get_field(get_field(node, "inventory"), "devices"); }

std::string models(const json& devices) {
  std::set<std::string> seen;
  std::string out;
  if (!devices.is_array()) return "-";
  for (const auto& d : devices) {
    auto m = get_string(d, "model");
    if (m.empty() || !seen.insert(m).second) continue;
    if (!out.empty()) out += ',';
    out += m;
  }
  return out.empty() ? "-" : out;
}

std::string free_of_total(const json& devices) {
  if (!devices.is_array()) return "0/0";
  int free = 0;
  for (const auto& d : devices)
    if (get_bool(d, "healthy", true) && get_field(d, "job").is_null()) ++free;
  return std::to_string(free) + "/" + std::to_string(devices.size());
}

std::string heartbeat_age(const json& node, int64_t now_ms) {
  auto t = api::parse_rfc3339(get_string(node, "last_heartbeat"));
  if (!t) return "never";
  return format_age((now_ms - *t) / 1000) + " ago";
}

std::string opt_unit(const json& d, const char* key, const char* unit) {
  auto v = get_int(d, key);
  return v ? std::to_string(*v) + unit : "-";
}

// "hl-gaudi2-1.17.0-fw-51.2.0-sec-9", or "a, b" when the cards differ; "-" when none reported.
std::string firmware_versions(const json& devices) {
  std::set<std::string> seen;
  if (devices.is_array())
    for (const auto& d : devices)
      if (auto v = get_string(d, "firmware_version"); !v.empty()) seen.insert(v);
  std::string out;
  for (const auto& v : seen) out += (out.empty() ? "" : ", ") + v;
  return out.empty() ? "-" : out;
}

// NIC ports up / all, summed over the cards that report them; "-" when none does.
std::string ports_up_of_total(const json& devices) {
  int64_t up = 0, total = 0;
  bool any = false;
  if (devices.is_array())
    for (const auto& d : devices)
      if (auto t = get_int(d, "ports_total")) {
        any = true;
        total += *t;
        up += get_int(d, "ports_up").value_or(0);
      }
  return any ? std::to_string(up) + "/" + std::to_string(total) : "-";
}

// "module 5" / "modules 1, 5": the cards with a port down; "" when none.
std::string ports_down(const json& devices) {
  std::vector<std::string> modules;
  if (devices.is_array())
    for (const auto& d : devices) {
      const auto& down = get_field(d, "ports_down");
      if (down.is_array() && !down.empty()) modules.push_back(get_text(d, "module_id"));
    }
  if (modules.empty()) return "";
  std::string out = modules.size() == 1 ? "module " : "modules ";
  for (size_t i = 0; i < modules.size(); ++i) out += (i ? ", " : "") + modules[i];
  return out;
}

// A node's labels as "rack=r7,fabric=ib"; the keys admins set (admin_labels) marked
// with '*' when `mark_admin`; "-" for none.
std::string labels_of(const json& node, bool mark_admin) {
  const auto& labels = get_field(node, "labels");
  const auto& admin = get_field(node, "admin_labels");
  std::string out;
  if (labels.is_object())
    for (const auto& [k, v] : labels.items()) {
      if (!v.is_string()) continue;
      const bool by_admin = mark_admin && admin.is_object() && admin.contains(k);
      out += (out.empty() ? "" : ",") + k + "=" + v.get<std::string>() + (by_admin ? "*" : "");
    }
  return out.empty() ? "-" : printable(out);
}

// The node's reservations not ended (GET /v1/nodes: issue 32), one per line for the
// notes under the table: "n1 reserved for demo from START to END (maintenance)".
std::string reservation_lines(const json& node) {
  std::string out;
  const auto& list = get_field(node, "reservations");
  if (!list.is_array()) return out;
  for (const auto& r : list)
    out += printable(get_string(node, "name")) + " reserved for " + printable(get_string(r, "name")) + " from " +
           printable(get_string(r, "start")) + " to " + printable(get_string(r, "end")) +
           (get_field(r, "maintenance") == json(true) ? " (maintenance)" : "") + "\n";
  return out;
}

// "ready", or "ready+reserved" while a reservation's window is open at now_ms.
std::string state_of(const json& node, int64_t now_ms) {
  std::string state = get_string(node, "state");
  const auto& list = get_field(node, "reservations");
  if (!list.is_array()) return state;
  for (const auto& r : list) {
    auto start = api::parse_rfc3339(get_string(r, "start"));
    auto end = api::parse_rfc3339(get_string(r, "end"));
    if (start && end && *start <= now_ms && now_ms < *end) return state + "+reserved";
  }
  return state;
}

}  // namespace

std::string render_nodes_table(const json& nodes, int64_t now_ms, bool wide) {
  if (!nodes.is_array() || nodes.empty()) return "No nodes.\n";
  std::vector<std::string> head = {"NAME", "STATE", "MODEL", "FREE", "CARDS", "FREE-GROUPS"};
  if (wide) head.insert(head.end(), {"DRIVER", "FIRMWARE", "PORTS"});
  head.emplace_back("HEARTBEAT");
  if (wide) head.emplace_back("LABELS");
  Table t(head);
  for (const auto& n : nodes) {
    const auto& devs = devices_of(n);
    std::vector<std::string> row = {get_string(n, "name"), state_of(n, now_ms),
                                    models(devs),          free_of_total(devs),
                                    render_card_map(devs), render_free_groups(get_field(n, "free_groups"))};
    if (wide) {
      const std::string driver = get_string(get_field(n, "inventory"), "driver_version");
      row.insert(row.end(), {driver.empty() ? "-" : driver, firmware_versions(devs), ports_up_of_total(devs)});
    }
    row.push_back(heartbeat_age(n, now_ms));
    if (wide) row.push_back(labels_of(n, false));
    t.add_row(row);
  }
  std::string why;  // Each degraded node, and why: too long for a column.
  for (const auto& n : nodes) {
    auto reason = get_string(n, "degraded");
    if (!reason.empty()) why += printable(get_string(n, "name")) + " degraded: " + printable(reason) + "\n";
    auto down = ports_down(devices_of(n));
    if (!down.empty())
      why += printable(get_string(n, "name")) + ": ports down on " + down + ", not used for multi-node jobs\n";
    why += reservation_lines(n);
  }
  return t.render() + kCardMapLegend + "\n" + why;
}

std::string render_node_detail(const json& node, int64_t now_ms) {
  std::ostringstream o;
  const auto& inv = get_field(node, "inventory");
  const auto& devs = devices_of(node);
  auto line = [&](const char* key, const std::string& value) {
    if (!value.empty()) o << key << ": " << printable(value) << '\n';
  };
  line("Name", get_string(node, "name"));
  line("Address", get_string(node, "address"));
  line("State", state_of(node, now_ms));
  if (std::string r = reservation_lines(node); !r.empty()) o << "Reservations:\n" << r;
  line("Degraded", get_string(node, "degraded"));
  line("Vendor", get_string(inv, "vendor"));
  line("Driver", get_string(inv, "driver_version"));
  if (auto fw = firmware_versions(devs); fw != "-") line("Firmware", fw);
  if (auto ports = ports_up_of_total(devs); ports != "-") {
    auto down = ports_down(devs);
    line("NIC ports up", ports + (down.empty() ? "" : " (down on " + down + ": not used for multi-node jobs)"));
  }
  line("NIC ports", get_string(inv, "ports_error"));
  line("Isolation", get_string(inv, "isolation"));  // cgroup1, cgroup2 or none; absent from older agents.
  line("Images", get_string(inv, "containers"));    // "podman 4.3.1, runc"; absent: runs no images.
  if (const std::string labels = labels_of(node, true); labels != "-")
    line("Labels", labels + (labels.find('*') != std::string::npos ? " (*: set by an admin)" : ""));
  if (auto cpus = get_int(inv, "cpus")) {
    std::string numa;
    const auto& nodes = get_field(inv, "numa");
    if (nodes.is_array())
      for (const auto& n : nodes)
        numa += (numa.empty() ? " (NUMA " : ", ") + std::to_string(get_int(n, "id").value_or(0)) + ": " +
                get_string(n, "cpus");
    const std::string used = get_int(node, "cpus_used") ? get_text(node, "cpus_used") + " of " : "";
    line("CPUs", used + std::to_string(*cpus) + (used.empty() ? "" : " held") + numa + (numa.empty() ? "" : ")"));
  }
  if (auto mib = get_int(inv, "memory_mib")) {
    auto held = get_int(node, "memory_used_mib");
    line("Memory",
         (held ? std::to_string(*held) + " of " : "") + std::to_string(*mib) + " MiB" + (held ? " held" : ""));
  }
  auto hb = get_string(node, "last_heartbeat");
  line("Last heartbeat", hb.empty() ? "never" : hb + " (" + heartbeat_age(node, now_ms) + ")");
  line("Cards", render_card_map(devs) + "  " + free_of_total(devs) + " free");
  line("Free groups", render_free_groups(get_field(node, "free_groups")));
  if (devs.is_array() && !devs.empty()) {
    Table t({"MODULE", "INDEX", "MODEL", "HEALTH", "UTIL", "MEM_USED", "MEM_TOTAL", "TEMP", "POWER", "JOB"});
    for (const auto& d : devs) {
      std::string health = get_bool(d, "healthy", true) ? "ok" : "unhealthy";
      auto why = get_string(d, "health_reason");
      if (!why.empty()) health += " (" + why + ")";
      auto job = get_text(d, "job");
      t.add_row({get_text(d, "module_id"), get_text(d, "index"), get_string(d, "model"), health,
                 opt_unit(d, "utilization_pct", "%"), opt_unit(d, "memory_used_mib", " MiB"),
                 opt_unit(d, "memory_total_mib", " MiB"), opt_unit(d, "temperature_c", " C"),
                 opt_unit(d, "power_w", " W"), job.empty() ? "-" : job});
    }
    o << '\n' << t.render() << kCardMapLegend << '\n';
  }
  return o.str();
}

std::string render_inventory(const json& inventory) {
  std::ostringstream o;
  const auto& models_j = get_field(inventory, "models");
  Table t({"MODEL", "VENDOR", "CARDS", "HEALTHY", "FREE", "FREE-GROUPS"});
  if (models_j.is_array()) {
    for (const auto& m : models_j)
      t.add_row({get_string(m, "model"), get_string(m, "vendor"), get_text(m, "cards"), get_text(m, "healthy"),
                 get_text(m, "free"), render_free_group_counts(get_field(m, "free_groups"))});
  }
  if (t.rows() == 0)
    o << "No cards.\n";
  else
    o << t.render();
  const auto& nodes = get_field(inventory, "nodes");
  o << "nodes: " << get_int(nodes, "ready").value_or(0) << " ready, ";
  if (auto degraded = get_int(nodes, "degraded").value_or(0)) o << degraded << " degraded, ";
  o << get_int(nodes, "draining").value_or(0) << " draining, " << get_int(nodes, "down").value_or(0) << " down\n";
  return o.str();
}

}  // namespace tessel::cli
