// ClusterState: projects (CRUD), and what they mean for the scheduling pass:
// quotas (ProjectLimits) and fair share (UsageLedger, fair_share_factors).
//
// Usage survives restarts and the pruning of jobs through the usage records
// (state_history.cpp): restore() adds every stored record to the ledger, and every
// commit that ends an attempt adds its record (account_usage_locked). Each pass adds
// the running jobs' intervals up to now to a copy of the ledger.
#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

int64_t card_count(const std::vector<api::Allocation>& allocations) {
  int64_t n = 0;
  for (const auto& a : allocations) n += static_cast<int64_t>(a.module_ids.size());
  return n;
}

}  // namespace

std::vector<api::Project> ClusterState::projects() const {
  MutexLock lk(mu_);
  std::map<std::string, api::Project> all = projects_.all();
  std::vector<api::Project> out;
  out.reserve(all.size());
  for (auto& [_, p] : all) out.push_back(std::move(p));
  return out;
}

Result<api::Project> ClusterState::project(const std::string& name) const {
  MutexLock lk(mu_);
  if (auto p = projects_.get(name)) return *p;
  return Error::not_found("project " + name + " not found");
}

Result<api::Project> ClusterState::create_project(const api::Project& p) {
  MutexLock lk(mu_);
  if (projects_.exists(p.name)) return Error::conflict("project " + p.name + " already exists");
  return write_project_locked(p);
}

Result<api::Project> ClusterState::put_project(const api::Project& p) {
  MutexLock lk(mu_);
  return write_project_locked(p);
}

Result<api::Project> ClusterState::write_project_locked(const api::Project& p) {
  Txn txn;
  txn.batch.put_projects.push_back(p);
  txn.apply.push_back([this, p]() REQUIRES(mu_) {
    projects_.put(p);
    spdlog::info("project {} set: shares={} quotas={}", p.name, p.shares, p.quotas.size());
    mark_dirty_locked();  // A higher max may let a pending job start.
  });
  if (!commit_locked(txn, "project")) return storage_unavailable("the project");
  return p;
}

Result<api::Project> ClusterState::delete_project(const std::string& name) {
  MutexLock lk(mu_);
  if (name == api::kDefaultProject) return Error::conflict("the default project cannot be deleted");
  std::optional<api::Project> gone = projects_.get(name);
  if (!projects_.stored(name) || !gone) return Error::not_found("project " + name + " not found");
  for (const auto& [_, e] : jobs_) {
    if (e.job.spec.project == name && !api::is_terminal(e.job.state))
      return Error::conflict("project " + name + " has job " + e.job.id + " not yet ended");
  }
  Txn txn;
  txn.batch.delete_projects.push_back(name);
  txn.apply.push_back([this, name]() REQUIRES(mu_) {
    projects_.erase(name);
    spdlog::info("project {} deleted", name);
  });
  if (!commit_locked(txn, "project delete")) return storage_unavailable("the project deletion");
  return *gone;
}

std::map<std::string, ClusterState::ProjectUsage> ClusterState::project_usage() const {
  MutexLock lk(mu_);
  const int64_t now = clock_.now_ms();
  auto usage = usage_now_locked(now).by_project(now);
  auto factors = fair_share_factors(projects_.shares(), usage);
  std::map<std::string, ProjectUsage> out;
  for (const auto& [name, f] : factors) out[name] = ProjectUsage{usage[name], f};
  return out;
}

UsageLedger ClusterState::usage_now_locked(int64_t now) const {
  UsageLedger ledger = usage_;
  for (int64_t seq : active_) {
    const api::Job& j = jobs_.at(seq).job;
    if (j.started_at_ms > 0) ledger.add(j.spec.project, j.user, card_count(j.allocations), j.started_at_ms, now);
  }
  return ledger;
}

int64_t ClusterState::active_jobs_in(const std::string& project) const {
  MutexLock lk(mu_);
  return active_counts_.of_project(project);
}

void ClusterState::project_stats_locked(StatsSnapshot& s) const {
  const std::map<std::string, api::Project> all = projects_.all();
  const int64_t now = clock_.now_ms();
  std::map<std::string, int64_t> shares;
  for (const auto& [name, p] : all) shares[name] = p.shares;
  const auto factors = fair_share_factors(shares, usage_now_locked(now).by_project(now));
  std::map<std::string, ProjectStats> by_name;
  for (const auto& [name, p] : all) {
    ProjectStats& ps = by_name[name];
    ps.name = name;
    if (auto f = factors.find(name); f != factors.end()) ps.fair_share = f->second;
    ps.max_active_jobs_per_user = p.max_active_jobs_per_user;
    for (const auto& [model, q] : p.quotas) {
      ps.guaranteed[model] = q.guaranteed;
      if (q.max) ps.max[model] = *q.max;
      ps.held[model] = 0;  // Shown at 0 beside its quota.
    }
  }
  for (int64_t seq : active_) {
    const api::Job& j = jobs_.at(seq).job;
    auto it = by_name.find(j.spec.project);
    if (it == by_name.end()) continue;
    for (const auto& [model, n] : cards_by_model_locked(j.allocations)) it->second.held[model] += n;
  }
  for (const auto* queue : {&jobs_.pending(), &jobs_.waiting(), &jobs_.held()})
    for (const auto& [_, e] : *queue)
      if (auto it = by_name.find(e->job.spec.project); it != by_name.end()) ++it->second.pending;
  for (auto& [_, ps] : by_name) s.projects.push_back(std::move(ps));
}

std::map<std::string, int64_t> ClusterState::cards_by_model_locked(
    const std::vector<api::Allocation>& allocations) const {
  std::map<std::string, int64_t> out;
  for (const auto& a : allocations) {
    out["*"] += static_cast<int64_t>(a.module_ids.size());
    auto n = nodes_.find(a.node);
    if (n == nodes_.end()) continue;
    for (int m : a.module_ids)
      for (const auto& d : n->second.rec.inventory.devices)
        if (d.module_id == m) ++out[d.model];
  }
  return out;
}

ClusterState::PassPolicy ClusterState::pass_policy_locked(int64_t now) const {
  PassPolicy policy;
  const UsageLedger ledger = usage_now_locked(now);
  for (const auto& [name, f] : fair_share_factors(projects_.shares(), ledger.by_project(now)))
    policy.fair_share[name] = f;
  for (const auto& [name, u] : ledger.by_user(now)) policy.user_usage[name] = u;
  if (!projects_.any_quota()) return policy;
  for (const auto& [name, p] : projects_.stored_projects()) {
    if (p.quotas.empty()) continue;
    ProjectLimits lim;
    lim.name = name;
    for (const auto& [model, q] : p.quotas) {
      if (q.max) lim.max[model] = *q.max;
      if (q.guaranteed > 0) lim.guaranteed[model] = q.guaranteed;
    }
    policy.index[name] = static_cast<int32_t>(policy.limits.size());
    policy.limits.push_back(std::move(lim));
  }
  for (int64_t seq : active_) {
    const api::Job& j = jobs_.at(seq).job;
    auto idx = policy.index.find(j.spec.project);
    if (idx == policy.index.end()) continue;
    for (const auto& [model, n] : cards_by_model_locked(j.allocations))
      policy.limits[static_cast<size_t>(idx->second)].held[model] += n;
  }
  return policy;
}

void ClusterState::apply_policy(const PassPolicy& policy, const api::Job& job, PendingJob& out) const {
  if (auto f = policy.fair_share.find(job.spec.project); f != policy.fair_share.end()) out.fair_share = f->second;
  if (auto u = policy.user_usage.find(job.user); u != policy.user_usage.end()) out.user_usage = u->second;
  out.preemptible = job.spec.preemptible;
  auto idx = policy.index.find(job.spec.project);
  if (idx == policy.index.end()) return;
  out.project = idx->second;
  const ProjectLimits& lim = policy.limits[static_cast<size_t>(idx->second)];
  const std::string& model = job.spec.model.empty() ? std::string("*") : job.spec.model;
  auto g = lim.guaranteed.find(model);
  if (g == lim.guaranteed.end()) return;
  auto h = lim.held.find(model);
  const int64_t held = h == lim.held.end() ? 0 : h->second;
  out.within_guarantee = held + int64_t{job.spec.devices} * job.spec.nodes <= g->second;
}

}  // namespace tessel::scheduler
