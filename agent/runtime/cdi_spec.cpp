#include "tessel/agent/cdi_spec.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace tessel::agent {

namespace {

// ordered_json: the file reads in the spec's own order (cdiVersion, kind, devices).
using Json = nlohmann::ordered_json;

Json device_node(const std::string& dev_root, const std::string& rel) {
  return Json{{"path", "/dev/" + rel}, {"hostPath", dev_root + "/" + rel}};
}

Json device(const std::string& name, Json nodes) {
  return Json{{"name", name}, {"containerEdits", Json{{"deviceNodes", std::move(nodes)}}}};
}

}  // namespace

std::string cdi_class(api::Vendor vendor) { return vendor == api::Vendor::habana ? "gaudi" : api::to_string(vendor); }

std::string cdi_kind(api::Vendor vendor) { return std::string(kCdiVendor) + "/" + cdi_class(vendor); }

std::optional<std::string> cdi_spec_json(const CdiInput& in) {
  std::vector<int> cards;
  for (const api::Device& d : in.devices) cards.push_back(d.index);
  std::sort(cards.begin(), cards.end());
  cards.erase(std::unique(cards.begin(), cards.end()), cards.end());

  Json devices = Json::array(), all = Json::array();
  for (int card : cards) {
    Json nodes = Json::array();
    for (const CardNode& n : in.nodes)
      if (n.card_index == card) nodes.push_back(device_node(in.dev_root, n.path));
    if (nodes.empty()) continue;  // A card whose nodes are missing: nothing to give.
    for (const Json& n : nodes) all.push_back(n);
    devices.push_back(device(std::to_string(card), std::move(nodes)));
  }
  if (devices.empty()) return std::nullopt;
  devices.push_back(device("all", std::move(all)));

  Json spec{{"cdiVersion", "0.5.0"}, {"kind", cdi_kind(in.vendor)}, {"devices", std::move(devices)}};
  if (!in.shared.empty()) {
    Json shared = Json::array();
    for (const std::string& rel : in.shared) shared.push_back(device_node(in.dev_root, rel));
    spec["containerEdits"] = Json{{"deviceNodes", std::move(shared)}};
  }
  return spec.dump(2) + "\n";
}

}  // namespace tessel::agent
