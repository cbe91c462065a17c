#pragma once
// Which groups of cards may be handed to one workload.
//
// Gaudi (by module id, 8-card baseboard, a buddy system): single cards, pairs
// {0,1} {2,3} {4,5} {6,7}, quads {0,1,2,3} {4,5,6,7}, and all eight.
// Huawei Ascend: the same blocks, by logical device id. On 910A-class 8-card boards the
// NPUs form two HCCS rings, {0-3} and {4-7}, and a job of 1, 2 or 4 must sit in one ring
// (or take all 8); the Gaudi blocks are such groups. Other Ascend boards (910B x8, a
// full HCCS mesh; 310 inference cards, no HCCS) would allow more, but one rule for the
// vendor never places a group a 910A board cannot run: Tessel uses the blocks for all.
// AWS Neuron (Trn1: a 2D torus of 16 devices; Trn2: connected groups of 1, 4, 8, 16), by
// device index: aligned blocks of 1, 4, 8 or all 16 devices ({0-3} {4-7} ..., {0-7}
// {8-15}, {0-15}), as AWS's scheduler extension and DRA driver hand them out. Nodes with
// fewer devices (trn2.3xlarge: 1) offer the blocks they hold whole.
// AWS Inferentia (Inf1, Inf2: the devices form a ring): any N adjacent devices by index,
// without wrapping past the last (NEURON_RT_VISIBLE_CORES takes one range): 12 on an
// inf2.48xlarge, 6 on an inf2.24xlarge, 3 of 4 on an inf1.6xlarge. A Neuron node is an
// Inferentia node when its model (the instance family neuron-ls prints) starts with "inf".
// Cambricon MLU (MLU-Link rings; Cambricon's device plugin forms rings only for 1, 2, 4
// or 8 cards): the Gaudi blocks, by card number.
// Google TPU (one host: 4 chips on v4/v5p, 2x2; 8 on v5e/v6e, 2x4): 1, 2, 4 or 8 chips,
// as single chips, 1x2, 2x2 and 2x4 sub-slices by chip index: the Gaudi blocks.
// NVIDIA, AMD Instinct (MI300-class: 8 GPUs in one XGMI hive, every pair one hop), Intel
// Data Center GPU (cards joined by Xe Link or PCIe; no size is forbidden): any subset is
// valid.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::api {

// How a node's groups are formed: any subset; the Gaudi buddy blocks of 1, 2, 4, 8
// within slots 0..7 (habana, ascend, cambricon, tpu); aligned blocks of 1, 4, 8, 16
// within 0..15 (neuron: Trainium); any run of adjacent slots within 0..15 (neuron:
// Inferentia).
enum class GroupRule { any_subset, buddy8, neuron16, ring16 };
// The vendor's rule when the model is not known (neuron: Trainium's blocks).
GroupRule group_rule(Vendor v);
// The rule of a node of `v` whose cards are `model` (neuron "inf1", "inf2": ring16).
GroupRule group_rule(Vendor v, std::string_view model);
// The rule of the node an inventory describes (by its first device's model).
GroupRule group_rule(const NodeInventory& inv);

// Most cards one job may ask for per node (a node has at most 32 slots).
inline constexpr int kMaxDevices = 32;

// True when a node of `rule` can hold a group of `size` (>= 1) cards at all.
bool rule_allows(GroupRule rule, int size);

// "" when `devices` cards per node is a request some node of `vendor` (any vendor
// when nullopt) and `model` ("" any) can run, else why not, e.g. "must be 0, 1, 2,
// 4 or 8 with vendor habana".
std::string devices_error(int devices, std::optional<Vendor> vendor, std::string_view model);

// True when any subset of a node's cards is a valid group for `v` (group_rule() is
// any_subset: every vendor but habana, ascend, cambricon, tpu and neuron).
bool any_subset_is_valid(Vendor v);

// The fixed list of valid Gaudi groups of `size` cards (1, 2, 4 or 8), each ascending.
const std::vector<Group>& gaudi_groups_of_size(int size);

// Valid Gaudi groups of size 2, 4 and 8 whose members are all in `usable` (module ids).
// Keys are sizes; sizes with no group are omitted.
std::map<int, std::vector<Group>> gaudi_groups_within(const std::set<int>& usable);

// The fixed list of valid Neuron groups of `size` devices (1, 4, 8 or 16), each ascending.
const std::vector<Group>& neuron_groups_of_size(int size);

// The groups larger than one card of a node of `rule` (not any_subset) whose members
// are all in `usable`, by size; sizes with no group are omitted. Empty for any_subset.
std::map<int, std::vector<Group>> groups_within(GroupRule rule, const std::set<int>& usable);

// The module ids of the healthy devices of an inventory.
std::set<int> healthy_module_ids(const NodeInventory& inv);

}  // namespace tessel::api
