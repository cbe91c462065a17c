#pragma once
// Human views of the API's node and inventory JSON: `tessel nodes`, `tessel node`
// and `tessel inventory`. Pure functions: JSON and the current time in, text out.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tessel::cli {

// Table NAME STATE MODEL FREE CARDS FREE-GROUPS HEARTBEAT, then the card map legend.
// FREE is free healthy cards / all cards; CARDS is render_card_map; HEARTBEAT is the
// age of last_heartbeat. An empty array renders as "No nodes.\n". `wide` adds DRIVER
// (driver_version), FIRMWARE (the cards' firmware versions, "a, b" when they differ)
// and PORTS (NIC ports up / all, over the cards; "-" when not reported) before
// HEARTBEAT. After the legend, a line for each degraded node and for each node whose
// ports are down ("n3: ports down on module 5, not used for multi-node jobs").
std::string render_nodes_table(const nlohmann::json& nodes, int64_t now_ms, bool wide = false);

// "Key: value" lines for one node, then a table of its devices.
std::string render_node_detail(const nlohmann::json& node, int64_t now_ms);

// Table MODEL VENDOR CARDS HEALTHY FREE FREE-GROUPS, then a line of node counts.
std::string render_inventory(const nlohmann::json& inventory);

}  // namespace tessel::cli
