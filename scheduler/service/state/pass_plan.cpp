#include "tessel/scheduler/pass_plan.hpp"

#include <tuple>
#include <unordered_set>

#include "tessel/scheduler/master_ports.hpp"

namespace tessel::scheduler {

namespace {

// Jobs within their guarantee asked for a plan per pass, at most: a plan costs a
// walk over the nodes of the job's model, and the next pass comes soon.
constexpr int kPlansPerPass = 8;

void plan_preemption(const ModuleGroupAllocator& alloc, const PassInput& in,
                     const std::unordered_set<std::string>& placed_ids, PassPlan& plan) {
  const std::vector<PendingJob>& queue = *in.queue;
  // Shapes (project, vendor, model, devices, nodes, the job's node constraints if any)
  // that found no plan: the same again finds none.
  std::set<std::tuple<int32_t, int, std::string, int, int, const api::NodeConstraints*>> failed;
  std::optional<std::vector<RunningJob>> running;
  int plans = 0;
  for (uint32_t i : plan.result.order) {
    const PendingJob& job = queue[i];
    if (!job.within_guarantee || placed_ids.count(job.id)) continue;
    auto shape = std::make_tuple(job.project, job.vendor ? static_cast<int>(*job.vendor) : -1, job.model, job.devices,
                                 job.nodes, job.constraints);
    if (failed.count(shape)) continue;
    if (++plans > kPlansPerPass) break;
    if (!running) running = in.running();
    PreemptionOutcome out =
        alloc.plan_preemption(PreemptionRequest{&job, *running, in.limits, in.now_ms, in.preempt_min_runtime_ms});
    if (out.plan) {
      plan.preemption = PassPlan::Preemption{i, std::move(*out.plan)};
      return;
    }
    failed.insert(shape);
    if (out.retry_at_ms && (!plan.preempt_retry_at_ms || *out.retry_at_ms < *plan.preempt_retry_at_ms))
      plan.preempt_retry_at_ms = out.retry_at_ms;
  }
}

}  // namespace

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
  if (in.limits != nullptr && in.running) plan_preemption(alloc, in, placed_ids, plan);
  return plan;
}

}  // namespace tessel::scheduler
