#include "pending_reasons.hpp"

#include "node_filter.hpp"
#include "tessel/api/topology.hpp"

namespace tessel::scheduler::reasons {

std::string cards_phrase(const std::optional<api::Vendor>& vendor, const std::string& model) {
  std::string out;
  if (vendor) out += api::to_string(*vendor) + " ";
  if (!model.empty()) out += model + " ";
  return out + "cards";
}

std::string invalid_devices(int devices) {
  return "invalid request: devices is " + std::to_string(devices) + ", must be 0 to " +
         std::to_string(api::kMaxDevices);
}

std::string invalid_nodes(int nodes) {
  return "invalid request: nodes is " + std::to_string(nodes) + ", must be at least 1";
}

std::string duplicate_in_queue() { return "duplicate job id in the queue; only the first entry is scheduled"; }

std::string already_holds_cards() { return "already holds cards; release them before scheduling it again"; }

std::string no_ready_nodes() { return "no ready nodes"; }

std::string cluster_too_small(int nodes_in_cluster) {
  return "unschedulable: cluster has " + std::to_string(nodes_in_cluster) +
         (nodes_in_cluster == 1 ? " node" : " nodes");
}

std::string never_fits(int devices, int nodes_needed, int nodes_capable, const std::optional<api::Vendor>& vendor,
                       const std::string& model) {
  const std::string needs = ", job needs " + std::to_string(nodes_needed);
  if (devices == 0) {
    if (!vendor && model.empty()) return "only " + std::to_string(nodes_capable) + " ready nodes" + needs;
    std::string what = cards_phrase(vendor, model);
    if (nodes_capable == 0) return "no ready node has " + what;
    return "only " + std::to_string(nodes_capable) + " ready nodes have " + what + needs;
  }
  std::string what = std::to_string(devices) + " healthy " + cards_phrase(vendor, model);
  // Sizes only some rules allow (3, 6, 12: any subset, an Inferentia ring) say so.
  if (!api::rule_allows(api::GroupRule::buddy8, devices) && devices != 16) what += " in one valid group";
  if (nodes_capable == 0) return "no node has " + what;
  return "only " + std::to_string(nodes_capable) + (nodes_capable == 1 ? " node has " : " nodes have ") + what + needs;
}

std::string waiting_for_cards(int devices, int nodes_needed, const std::optional<api::Vendor>& vendor,
                              const std::string& model) {
  std::string out =
      "waiting for " + std::to_string(devices) + " free " + cards_phrase(vendor, model) + " in one valid group";
  if (nodes_needed > 1) out += " on each of " + std::to_string(nodes_needed) + " nodes";
  return out;
}

std::string excluded_nodes(const std::string& base, const std::string& driver_version,
                           const std::vector<std::string>& notes) {
  std::string out = base + " (";
  if (!driver_version.empty()) out += "driver_version " + driver_version + (notes.empty() ? "" : "; ");
  for (size_t i = 0; i < notes.size(); ++i) out += (i ? "; node " : "node ") + notes[i];
  return out + ")";
}

std::string waiting_behind_reservation(const std::string& job_id) {
  return "waiting behind reservation for job " + job_id;
}

std::string listed_node(const std::string& node, const std::string& why) {
  return "node " + node + " of the nodelist " + why;
}

std::string too_few_matching(int nodes_matching, int nodes_needed, const std::string& filter) {
  if (nodes_matching == 0) return "no ready node " + filter;
  return "only " + std::to_string(nodes_matching) + (nodes_matching == 1 ? " ready node " : " ready nodes ") + filter +
         ", job needs " + std::to_string(nodes_needed);
}

std::string topology_too_small(int nodes_needed, const std::string& key, const std::string& value, int nodes) {
  std::string out = "no " + key + " block has " + std::to_string(nodes_needed) + " nodes able to take the job";
  if (nodes == 0) return out + " (no node with label " + key + " can)";
  return out + " (largest: " + key + "=" + value + " with " + std::to_string(nodes) + ")";
}

std::string topology_waiting(int nodes_needed, const std::string& key, const std::string& value, int nodes_free) {
  std::string out = "waiting for " + std::to_string(nodes_needed) + " nodes with one " + key + " value: ";
  if (nodes_free == 0) return out + "no " + key + " block has a node free";
  return out + "largest block " + key + "=" + value + " has " + std::to_string(nodes_free) + " free";
}

std::string with_constraints(std::string text, const api::NodeConstraints* constraints) {
  if (constraints == nullptr) return text;
  return text.append(" (").append(detail::describe(*constraints)).append(")");
}

std::string never_fits_resources(int cpus, int64_t memory_mib, int nodes_needed, int nodes_capable, int most_cpus,
                                 int64_t most_memory_mib) {
  std::string what;
  if (cpus > 0) what = std::to_string(cpus) + (cpus == 1 ? " CPU" : " CPUs");
  if (memory_mib > 0) what += (what.empty() ? "" : " and ") + std::to_string(memory_mib) + " MiB of memory";
  what += " per node (at most " + std::to_string(most_cpus) + " CPUs, " + std::to_string(most_memory_mib) + " MiB)";
  if (nodes_capable == 0) return "no node can hold " + what;
  return "only " + std::to_string(nodes_capable) + (nodes_capable == 1 ? " node can hold " : " nodes can hold ") +
         what + ", job needs " + std::to_string(nodes_needed);
}

std::string waiting_for_resources(const std::string& shortage) {
  const bool cpus = shortage.find(" CPUs in use") != std::string::npos;
  return std::string("waiting for ") + (cpus ? "CPUs" : "memory") + " (" + shortage + ")";
}

std::string cpus_short(const std::string& node, int in_use, int total, int needed) {
  return node + ": " + std::to_string(in_use) + " of " + std::to_string(total) + " CPUs in use, job needs " +
         std::to_string(needed);
}

std::string memory_short(const std::string& node, int64_t in_use, int64_t total, int64_t needed) {
  return node + ": " + std::to_string(in_use) + " of " + std::to_string(total) + " MiB of memory in use, job needs " +
         std::to_string(needed) + " MiB";
}

namespace {
std::string of_cards(int64_t n, const std::string& model) {
  return std::to_string(n) + (model == "*" ? "" : " " + model) + " cards";
}
}  // namespace

std::string project_at_max(const std::string& project, int64_t max, const std::string& model) {
  return "project " + project + " at its max of " + of_cards(max, model);
}

std::string project_at_guarantee(const std::string& project, int64_t guaranteed, const std::string& model) {
  return "project " + project + " at its guarantee of " + of_cards(guaranteed, model) +
         " (only preemptible jobs may borrow past it)";
}

}  // namespace tessel::scheduler::reasons
