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
// Cambricon MLU (MLU-Link rings; Cambricon's device plugin forms rings only for 1, 2, 4
// or 8 cards): the Gaudi blocks, by card number.
// Google TPU (one host: 4 chips on v4/v5p, 2x2; 8 on v5e/v6e, 2x4): 1, 2, 4 or 8 chips,
// as single chips, 1x2, 2x2 and 2x4 sub-slices by chip index: the Gaudi blocks.
// NVIDIA, AMD Instinct (MI300-class: 8 GPUs in one XGMI hive, every pair one hop), Intel
// Data Center GPU (cards joined by Xe Link or PCIe; no size is forbidden): any subset is
// valid.

#include <map>
#include <set>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::api {

// How a vendor's groups are formed: any subset; the Gaudi buddy blocks of 1, 2, 4, 8
// within slots 0..7 (habana, ascend, cambricon, tpu); aligned blocks of 1, 4, 8, 16 within 0..15 (neuron).
enum class GroupRule { any_subset, buddy8, neuron16 };
GroupRule group_rule(Vendor v);

// True when any subset of a node's cards is a valid group for `v` (group_rule() is
// any_subset: every vendor but habana, ascend and neuron).
bool any_subset_is_valid(Vendor v);

// The fixed list of valid Gaudi groups of `size` cards (1, 2, 4 or 8), each ascending.
const std::vector<Group>& gaudi_groups_of_size(int size);

// True when `size` is a card count a job may ask for (0, 1, 2, 4 or 8).
bool is_valid_group_size(int size);

// Valid Gaudi groups of size 2, 4 and 8 whose members are all in `usable` (module ids).
// Keys are sizes; sizes with no group are omitted.
std::map<int, std::vector<Group>> gaudi_groups_within(const std::set<int>& usable);

// The fixed list of valid Neuron groups of `size` devices (1, 4, 8 or 16), each ascending.
const std::vector<Group>& neuron_groups_of_size(int size);

// The groups larger than one card of a fixed-group vendor (GroupRule buddy8 or
// neuron16) whose members are all in `usable`, by size; sizes with no group are
// omitted. Empty for any_subset vendors.
std::map<int, std::vector<Group>> groups_within(Vendor v, const std::set<int>& usable);

// The module ids of the healthy devices of an inventory.
std::set<int> healthy_module_ids(const NodeInventory& inv);

}  // namespace tessel::api
