// JobSpec's placement constraints (issue 32): node_selector, nodelist, exclude,
// reservation and topology.
#include <algorithm>
#include <string>
#include <vector>

#include "job_fields.hpp"
#include "tessel/api/labels.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {

// `key` (nodelist, exclude): node names, each once.
void read_node_names(FieldReader& r, const json& j, const std::string& key, std::vector<std::string>& out) {
  if (!r.has(key)) return;
  const auto& names = j[key];
  if (!names.is_array()) return r.fail(key, "must be an array of node names");
  if (names.size() > kMaxNodeList) return r.fail(key, "more than " + std::to_string(kMaxNodeList) + " nodes");
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!names[i].is_string()) return r.fail(at, "must be a node name");
    const auto& name = names[i].get_ref<const std::string&>();
    if (!is_node_name(name)) return r.fail(at, "must be 1 to 253 of [A-Za-z0-9._-]");
    if (std::find(out.begin(), out.end(), name) != out.end()) return r.fail(at, "lists " + name + " twice");
    out.push_back(name);
  }
}

// topology: {"required": KEY} or {"preferred": KEY} (issue 32), a label key each.
void read_topology(FieldReader& r, const json& j, Topology& t) {
  if (!r.has("topology")) return;
  const json& o = j["topology"];
  if (!o.is_object()) return r.fail("topology", "must be {\"required\": KEY} or {\"preferred\": KEY}");
  for (const auto& [name, value] : o.items()) {
    const std::string field = "topology." + name;
    if (name != "required" && name != "preferred") return r.fail(field, "unknown field");
    if (!value.is_string()) return r.fail(field, "must be a label key, like \"rack\"");
    const auto& key = value.get_ref<const std::string&>();
    if (std::string why = label_key_error(key); !why.empty()) return r.fail(field, why);
    (name == "required" ? t.required : t.preferred) = key;
  }
  if (!t.required.empty() && !t.preferred.empty())
    return r.fail("topology.preferred", "cannot be given with topology.required");
  if (t.empty()) return r.fail("topology", "must name \"required\" or \"preferred\"");
}

}  // namespace

void read_node_constraints(FieldReader& r, const json& j, JobSpec& s) {
  NodeConstraints& c = s.constraints;
  if (r.has("node_selector")) {
    auto selector = labels_from_json(j["node_selector"], "node_selector");
    if (!selector) {
      const std::string& f = selector.error().field;
      return r.fail(f, selector.error().message.substr(f.size() + 2));
    }
    c.node_selector = std::move(*selector);
  }
  read_node_names(r, j, "nodelist", c.nodelist);
  read_node_names(r, j, "exclude", c.exclude);
  if (static_cast<int64_t>(c.nodelist.size()) > s.nodes)
    return r.fail("nodelist", "names " + std::to_string(c.nodelist.size()) + " nodes but the job asks for " +
                                  std::to_string(s.nodes) + " (nodes)");
  for (const std::string& n : c.exclude)
    if (std::find(c.nodelist.begin(), c.nodelist.end(), n) != c.nodelist.end())
      return r.fail("exclude", "node " + n + " is in nodelist too");
  r.optional_string("reservation", c.reservation, 64);
  if (r.has("reservation") && !is_reservation_name(c.reservation))
    r.fail("reservation", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  read_topology(r, j, c.topology);
}

}  // namespace tessel::api
