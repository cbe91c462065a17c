#include "tessel/scheduler/pass_plan.hpp"

#include <unordered_set>

#include "tessel/scheduler/master_ports.hpp"

namespace tessel::scheduler {

PassPlan plan_pass(ModuleGroupAllocator& alloc, PassInput in) {
  PassPlan plan;
  const std::vector<PendingJob>& queue = *in.queue;
  plan.result = alloc.schedule(queue, in.now_ms, in.limits);
  std::vector<Placement>& placed = plan.result.placed;
  placed.insert(placed.end(), std::make_move_iterator(in.ready.begin()), std::make_move_iterator(in.ready.end()));

  std::unordered_set<std::string> placed_ids;
  for (const auto& p : placed) placed_ids.insert(p.job_id);
  plan.queue_positions.assign(queue.size(), 0);
  int position = 0;
  for (uint32_t i : plan.result.order)
    if (!placed_ids.count(queue[i].id)) plan.queue_positions[i] = ++position;
  for (const auto& r : plan.result.reservations)
    if (r.start_ms) plan.estimated_starts.push_back({r.job_id, *r.start_ms});

  MasterPorts ports(in.master_port_lo, in.master_port_hi);
  plan.masters.reserve(placed.size());
  for (const auto& p : placed) {
    MasterEndpoint& m = plan.masters.emplace_back();
    for (const auto& a : p.allocations) {
      if (a.rank != 0) continue;
      m.addr = in.address_of(a.node);
      m.port = ports.take(a.node, in.ports_in_use(a.node));
    }
  }
  return plan;
}

}  // namespace tessel::scheduler
