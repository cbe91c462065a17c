#pragma once
// CDI specs for a node's cards (issue 29): the Container Device Interface file (spec
// version 0.5.0, JSON) that lets operators' own `podman run --device tessel.dev/gaudi=2`
// give a container the same device nodes Tessel gives a job's container on card 2
// (container_devices() in container.hpp).
//
//   kind            "tessel.dev/<cdi_class(vendor)>"
//   devices         one per card of the inventory that has nodes, named by its
//                   Device::index ("0", "1", ...), with that card's nodes only; then
//                   "all", with every such card's nodes
//   containerEdits  (spec level) the vendor's shared control nodes that are present:
//                   CDI applies them with any device of the spec
// Each node is {"path": "/dev/<rel>", "hostPath": "<dev_root>/<rel>"}, rel its path
// below the dev root, as a job's container sees it.
//
// Device nodes only, no env edits: which cards a job's framework uses (e.g.
// HABANA_VISIBLE_MODULES) is set per task by Tessel (device_env.hpp) from its
// allocation; a spec written once per node cannot know an operator's intent.

#include <optional>
#include <string>
#include <vector>

#include "tessel/agent/device_nodes.hpp"
#include "tessel/api/inventory.hpp"

namespace tessel::agent {

inline constexpr const char* kCdiVendor = "tessel.dev";

// The CDI class of `vendor`'s cards: "gaudi" for habana, else the vendor's name
// ("nvidia", "amd", ...). Stable: operators type it.
std::string cdi_class(api::Vendor vendor);
// "tessel.dev/gaudi".
std::string cdi_kind(api::Vendor vendor);

struct CdiInput {
  api::Vendor vendor = api::Vendor::habana;
  std::string dev_root;              // Where the nodes are on the host ("/dev").
  std::vector<api::Device> devices;  // The inventory's cards.
  std::vector<CardNode> nodes;       // find_card_nodes(); nodes of no listed card are left out.
  std::vector<std::string> shared;   // The shared control nodes present, relative to dev_root.
};

// The spec's JSON text (pretty-printed, ending in a newline); nullopt when no card of
// `in.devices` has a node (CDI refuses a device without edits): then no spec is due.
std::optional<std::string> cdi_spec_json(const CdiInput& in);

}  // namespace tessel::agent
