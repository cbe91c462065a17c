#pragma once
// Compact, ASCII-only pictures of a node's cards and of its free card groups.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tessel::cli {

// One mark per module id 0..max(7, highest id), in brackets: "[UU....X.]".
//   U  in use by a job    .  free    X  unhealthy    -  no card with that id
// `devices` is the API's inventory.devices array (module_id, healthy, job).
// An unhealthy card shows X even when a job holds it. Empty or non-array -> "[]".
std::string render_card_map(const nlohmann::json& devices);

// The legend printed under tables that use render_card_map.
extern const char* const kCardMapLegend;

// A group of ids as "{2,3}" or, for a contiguous run of three or more, "{4-7}".
std::string format_group(std::vector<int> ids);

// The API's per-node free_groups ({"1":[[m]],"2":[[0,1]],...}) as the maximal free
// groups, largest first: "4:{4-7} 2:{2,3} 1:{0}". A group inside a bigger listed
// group is left out (if {4-7} is free, so are {4,5} and {6,7}). None -> "-".
std::string render_free_groups(const nlohmann::json& free_groups);

// The API's inventory-wide counts ({"1":n,"2":n,"4":n,"8":n}) as "1:5 2:2 4:1 8:0".
std::string render_free_group_counts(const nlohmann::json& counts);

}  // namespace tessel::cli
