// Fuzzes ModuleGroupAllocator with byte-driven operations on a small cluster and
// aborts when an invariant breaks: a card with two holders, a placement that is
// not one valid group of healthy cards, a gang on repeated nodes, a job on a node its
// constraints (labels, selector, nodelist, exclude) refuse, a gang with a required
// topology across two racks, a job on a node reserved for a window (issue 32) that it
// may not use: a job of reservation "demo" outside an open "demo" window, another job
// in an open window (maintenance or not) or running into one ahead.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tessel/api/topology.hpp"
#include "tessel/scheduler/allocator.hpp"

using tessel::scheduler::ModuleGroupAllocator;
using tessel::scheduler::NodeSpec;
using tessel::scheduler::PendingJob;

namespace {

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

void check(bool ok) {
  if (!ok) std::abort();
}

// The constraints a job may carry (issue 32), by a byte: none, a selector, an exclude
// list, a full or short nodelist, a required or preferred topology, a node reservation.
std::vector<tessel::api::NodeConstraints> constraint_menu() {
  std::vector<tessel::api::NodeConstraints> out(9);
  out[1].node_selector = {{"rack", "r0"}};
  out[2].exclude = {"n0", "n1"};
  out[3].nodelist = {"n2"};
  out[4].topology.required = "rack";
  out[5].topology.preferred = "rack";
  out[6].node_selector = {{"rack", "r1"}};
  out[6].topology.required = "rack";
  out[7].nodelist = {"n1", "n3"};
  out[8].reservation = "demo";
  return out;
}

// Whether a job may run on `node` from `now` as to the node's reservation windows.
bool window_ok(const NodeSpec& node, const PendingJob& j, int64_t now) {
  const tessel::scheduler::ReservationWindow* open = nullptr;
  const tessel::scheduler::ReservationWindow* next = nullptr;
  for (const auto& w : node.reservations) {
    if (w.start_ms <= now && now < w.end_ms) open = &w;
    if (w.start_ms > now && (next == nullptr || w.start_ms < next->start_ms)) next = &w;
  }
  if (j.constraints != nullptr && !j.constraints->reservation.empty())
    return open != nullptr && !open->maintenance && open->name == j.constraints->reservation;
  if (open != nullptr) return false;
  return next == nullptr || (j.time_limit_s && now + *j.time_limit_s * 1000 < next->start_ms);
}

// Whether `node` may hold a job with constraints `c` of `nodes` nodes.
bool admitted(const NodeSpec& node, const tessel::api::NodeConstraints& c, int nodes) {
  for (const auto& [k, v] : c.node_selector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return false;
  }
  for (const auto& x : c.exclude)
    if (x == node.name) return false;
  if (!c.nodelist.empty() && static_cast<int>(c.nodelist.size()) >= nodes) {
    bool listed = false;
    for (const auto& l : c.nodelist) listed = listed || l == node.name;
    if (!listed) return false;
  }
  return nodes == 1 || c.topology.required.empty() || node.labels.count(c.topology.required) > 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  ModuleGroupAllocator a;
  static const std::vector<tessel::api::NodeConstraints> kMenu = constraint_menu();
  if (in.next() % 2) a.set_topology_levels({"rack"});
  std::map<std::string, NodeSpec> nodes;
  std::map<std::string, int> live;  // job -> devices
  int next_job = 0;
  int64_t now = 0;
  while (in.n > 0) {
    uint8_t op = in.next() % 6;
    if (op == 0) {  // Upsert a node: health and presence from one byte each.
      NodeSpec n;
      n.name = "n" + std::to_string(in.next() % 4);
      const uint8_t kind = in.next() % 6;  // Gaudi mostly, then NVIDIA, then an Inferentia ring.
      n.vendor = kind == 0   ? tessel::api::Vendor::nvidia
                 : kind == 1 ? tessel::api::Vendor::neuron
                             : tessel::api::Vendor::habana;
      const std::string model = kind == 1 ? "inf2" : "HL-225";
      uint8_t present = in.next(), healthy = in.next();
      for (int m = 0; m < 8; ++m)
        if (present & (1 << m)) n.cards.push_back({m, 7 - m, model, (healthy & (1 << m)) != 0});
      n.schedulable = in.next() % 4 != 0;
      if (const uint8_t rack = in.next() % 3; rack != 2) n.labels["rack"] = "r" + std::to_string(rack);
      if (const uint8_t res = in.next(); res % 3 != 0) {  // Else CPUs and memory not reported.
        n.cpus = res;
        n.memory_mib = int64_t{res} * 256;
      }
      if (const uint8_t w = in.next(); w % 4 != 0) {  // A window from a minute before now to 3 ahead.
        const int64_t start = now + (int64_t{w / 4} - 16) * 4000;
        n.reservations.push_back({w % 4 == 3 ? "fix" : "demo", start, start + 60'000, w % 4 == 3});
      }
      a.upsert_node(n);
      nodes[n.name] = n;
    } else if (op == 1 || op == 2) {  // Schedule a few jobs.
      std::vector<PendingJob> q;
      int count = in.next() % 5;
      for (int i = 0; i < count; ++i) {
        PendingJob j;
        j.id = "j" + std::to_string(next_job++);
        j.seq = next_job;
        static const int kSizes[] = {0, 1, 2, 4, 8, 3, 6, 33};
        j.devices = kSizes[in.next() % 8];
        j.nodes = 1 + in.next() % 3;
        j.priority = in.next() % 3;
        uint8_t lim = in.next();
        if (lim % 2) j.time_limit_s = lim;
        const uint8_t ask = in.next();  // CPUs, memory, both or the node's share.
        if (ask % 4 == 1 || ask % 4 == 3) j.cpus = ask / 4 + 1;
        if (ask % 4 == 2 || ask % 4 == 3) j.memory_mib = int64_t{ask} * 64;
        if (const uint8_t c = in.next() % 16; c < kMenu.size() && c > 0) j.constraints = &kMenu[c];
        q.push_back(j);
      }
      // Nodes within their CPUs and memory before the pass stay within them.
      std::set<std::string> within;
      for (const auto& [name, node] : nodes) {
        const auto res = a.resources(name);
        if (res.cpus_used <= res.cpus && res.memory_used <= res.memory_mib) within.insert(name);
      }
      auto r = a.schedule(q, now);
      for (const std::string& name : within) {
        const auto res = a.resources(name);
        check(res.cpus == 0 || res.cpus_used <= res.cpus);
        check(res.memory_mib == 0 || res.memory_used <= res.memory_mib);
      }
      for (const auto& p : r.placed) {
        const PendingJob* j = nullptr;
        for (const auto& c : q)
          if (c.id == p.job_id) j = &c;
        check(j != nullptr && static_cast<int>(p.allocations.size()) == j->nodes);
        std::set<std::string> distinct, racks;
        for (const auto& al : p.allocations) {
          check(distinct.insert(al.node).second);
          const NodeSpec& node = nodes.at(al.node);
          if (j->constraints) check(admitted(node, *j->constraints, j->nodes));
          check(window_ok(node, *j, now));
          if (auto rack = node.labels.find("rack"); rack != node.labels.end()) racks.insert(rack->second);
          check(node.schedulable && static_cast<int>(al.module_ids.size()) == j->devices);
          if (j->devices > 0 && node.vendor == tessel::api::Vendor::habana) {
            const auto& valid = tessel::api::gaudi_groups_of_size(j->devices);
            bool found = false;
            for (const auto& g : valid) found = found || g == al.module_ids;
            check(found);
          }
          if (j->devices > 0 && node.vendor == tessel::api::Vendor::neuron)  // A run of adjacent devices.
            check(al.module_ids.back() - al.module_ids.front() + 1 == j->devices);
          for (int m : al.module_ids) {
            bool healthy = false;
            for (const auto& c : node.cards) healthy = healthy || (c.module_id == m && c.healthy);
            check(healthy);
          }
        }
        if (j->nodes > 1 && j->constraints && !j->constraints->topology.required.empty() && j->devices > 0)
          check(racks.size() == 1);
        if (j->devices > 0) live[p.job_id] = j->devices;
      }
    } else if (op == 3 && !live.empty()) {  // Finish a job.
      auto it = std::next(live.begin(), in.next() % live.size());
      a.release(it->first);
      live.erase(it);
    } else if (op == 4 && !nodes.empty()) {  // Lose or drain a node.
      auto it = std::next(nodes.begin(), in.next() % nodes.size());
      bool lose = in.next() % 2;
      a.set_schedulable(it->first, false);
      it->second.schedulable = false;
      if (lose)
        for (const auto& [job, d] : live) a.release_on_node(job, it->first);
    } else {
      now += in.next() * 1000;
    }
    // No card has two holders, and the allocator's holdings match holder().
    std::set<std::pair<std::string, int>> seen;
    for (const auto& [job, allocs] : a.holdings()) {
      for (const auto& al : allocs) {
        for (int m : al.module_ids) {
          check(seen.insert({al.node, m}).second);
          check(a.holder(al.node, m) == job);
        }
      }
    }
  }
  return 0;
}
