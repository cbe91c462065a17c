#pragma once
// Texts for jobs left pending, phrased so a person knows what to change or wait for.

#include <optional>
#include <string>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"

namespace tessel::scheduler::reasons {

// "HL-225 cards", "habana cards", "nvidia A100 cards", "cards".
std::string cards_phrase(const std::optional<api::Vendor>& vendor, const std::string& model);

std::string invalid_devices(int devices);
std::string invalid_nodes(int nodes);
std::string duplicate_in_queue();
std::string already_holds_cards();
std::string no_ready_nodes();
std::string cluster_too_small(int nodes_in_cluster);
// No (or too few) schedulable nodes have `devices` healthy cards of the kind in one valid group.
std::string never_fits(int devices, int nodes_needed, int nodes_capable, const std::optional<api::Vendor>& vendor,
                       const std::string& model);
// Capacity exists, but the cards are busy.
std::string waiting_for_cards(int devices, int nodes_needed, const std::optional<api::Vendor>& vendor,
                              const std::string& model);
// `base` (a never_fits text) with the job's driver constraint and the nodes its
// filters excluded: "only 1 node has 4 healthy HL-225 cards, job needs 2 (driver_version
// 1.17.0; node n3: ports down on module 5)".
std::string excluded_nodes(const std::string& base, const std::string& driver_version,
                           const std::vector<std::string>& notes);
std::string waiting_behind_reservation(const std::string& job_id);
// Node constraints (issue 32). A node of the nodelist that cannot take the job:
// "node n3 of the nodelist is not ready" (`why`: "is not ready", "is not rack=r7", ...).
std::string listed_node(const std::string& node, const std::string& why);
// Too few ready nodes pass the selector and exclude list (`filter`, "with rack=r9"):
// "no ready node with rack=r9", "only 1 ready node with rack=r7, job needs 2".
std::string too_few_matching(int nodes_matching, int nodes_needed, const std::string& filter);
// A gang with a required topology (issue 32): "no rack block has 4 nodes able to take
// the job (largest: rack=r1 with 2)", and "waiting for 4 nodes with one rack value:
// largest block rack=r1 has 2 free".
std::string topology_too_small(int nodes_needed, const std::string& key, const std::string& value, int nodes);
std::string topology_waiting(int nodes_needed, const std::string& key, const std::string& value, int nodes_free);
// `text` with the job's constraints after it, when it has any: "waiting for 4 free
// cards in one valid group (rack=r7; exclude n9)".
std::string with_constraints(std::string text, const api::NodeConstraints* constraints);
// Too few nodes could ever give the job its CPUs and memory per node: "no node can
// hold 64 CPUs per node (at most 32 CPUs, 257000 MiB)", "only 1 node can hold ...,
// job needs 2". 0 cpus or memory_mib: not asked.
std::string never_fits_resources(int cpus, int64_t memory_mib, int nodes_needed, int nodes_capable, int most_cpus,
                                 int64_t most_memory_mib);
// Cards are free but CPUs or memory are not: "waiting for CPUs (n1: 6 of 8 CPUs in
// use, job needs 4)"; `shortage` from cpus_short() or memory_short().
std::string waiting_for_resources(const std::string& shortage);
std::string cpus_short(const std::string& node, int in_use, int total, int needed);
std::string memory_short(const std::string& node, int64_t in_use, int64_t total, int64_t needed);
// "project vision at its max of 16 HL-225 cards" (model "*": "... of 16 cards").
std::string project_at_max(const std::string& project, int64_t max, const std::string& model);
std::string project_at_guarantee(const std::string& project, int64_t guaranteed, const std::string& model);

}  // namespace tessel::scheduler::reasons
