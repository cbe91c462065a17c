// ClusterState: restore, jobs (submit, list, cancel, logs) and the shared
// commit/stop helpers. Agent protocol: state_agent.cpp; scheduling and
// liveness: state_sched.cpp; read-only views: state_views.cpp.
#include <algorithm>
#include <random>
#include <utility>

#include <spdlog/spdlog.h>

#include "tessel/base/log_safe.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
int64_t random_inventory_tag() {
  std::random_device rd;
  return static_cast<int64_t>(((uint64_t{rd()} << 32) | rd()) & ((uint64_t{1} << 48) - 1)) + 1;
}
}  // namespace

ClusterState::ClusterState(Store& store, const Clock& clock, StateOptions opts)
    : store_(store),
      clock_(clock),
      opts_(std::move(opts)),
      polls_(opts_.max_long_polls, opts_.poll_after_ms, clock),
      versions_of_nodes_(clock.now_ms(), random_inventory_tag()),
      usage_(opts_.fairshare_half_life_ms) {
  alloc_.set_topology_levels(opts_.topology_levels);
}

Status ClusterState::restore() {
  auto snap = store_.load();
  if (!snap) return snap.error().wrap("restoring state");
  node_tokens_.restore(snap->node_tokens);
  MutexLock lk(mu_);
  const int64_t now = clock_.now_ms();
  for (auto& r : snap->reservations) reservations_.emplace(r.name, std::move(r));  // Before the nodes' specs.
  for (auto& rec : snap->nodes) {
    NodeEntry n{rec, false, "", versions_of_nodes_.next(), "", {}};
    // Alive as of the restart: agents heartbeat again within the timeout, so a
    // scheduler restart does not requeue everything.
    n.rec.last_heartbeat_ms = now;
    alloc_.upsert_node(node_spec_locked(n));
    nodes_.upsert(rec.name) = std::move(n);
    note_version_skew_locked(rec.name);
  }
  for (auto& job : snap->jobs) {
    int64_t seq = job_key(job.id);
    if (seq < 0) return Error{"restoring state: bad job id " + job.id};
    jobs_.restored_seq(seq >> kArrayKeyBits);
    if (job.spec.project.empty()) job.spec.project = api::kDefaultProject;  // Stored before projects existed.
    if (job.state == api::JobState::assigned || job.state == api::JobState::running) {
      active_.insert(seq, job.allocations);
      std::optional<int64_t> end;
      if (job.spec.time_limit_s) end = (job.started_at_ms ? job.started_at_ms : now) + *job.spec.time_limit_s * 1000;
      alloc_.hold(job.id, job.allocations, end);
    }
    if (counts_as_active(job)) active_counts_.add(job, 1);
    jobs_.put(seq, JobEntry{std::move(job), now, {}, 0, std::nullopt});
  }
  restore_arrays_locked();
  for (auto& p : snap->projects) projects_.put(std::move(p));
  // Accounting and fair share from the usage records (jobs pruned since included).
  WriteBatch loaded;
  loaded.put_usage = std::move(snap->usage);
  account_usage_locked(loaded);
  if (auto s = backfill_usage_locked(); !s) return s.error().wrap("restoring state");
  for (auto& f : snap->fences) {
    alloc_.hold(f.id, {f.allocation}, std::nullopt);
    nodes_.fence(f);
  }
  if (auto s = enqueue_restored_locked(); !s) return s.error().wrap("restoring state");
  restore_preemptions_locked();
  spdlog::log(opts_.quiet_restore ? spdlog::level::debug : spdlog::level::info,
              "restored {} jobs ({} pending, {} waiting for dependencies, {} active), {} nodes, {} fences, {} projects",
              jobs_.size(), jobs_.pending().size(), jobs_.waiting().size(), active_.size(), nodes_.size(),
              nodes_.fences().size(), projects_.stored_count());
  if (!jobs_.pending().empty()) mark_dirty_locked();
  return ok_status();
}

api::Job ClusterState::make_job(int64_t seq, api::JobSpec spec, const std::string& user) const {
  api::Job job;
  job.id = make_job_id(seq);
  job.name = spec.name;
  job.user = user;
  job.spec = std::move(spec);
  job.submitted_at_ms = clock_.now_ms();
  job.events.push_back(submitted_event(job));
  return job;
}

Status ClusterState::resolve_project_locked(api::JobSpec& spec) const {
  if (spec.project.empty()) spec.project = api::kDefaultProject;
  if (projects_.exists(spec.project)) return ok_status();
  return Error::invalid("project: unknown project " + spec.project, "project");
}

Status ClusterState::check_node_names_locked(const api::JobSpec& spec) const {
  for (const char* field : {"nodelist", "exclude"}) {
    const auto& names = field[0] == 'n' ? spec.constraints.nodelist : spec.constraints.exclude;
    for (size_t i = 0; i < names.size(); ++i)
      if (!nodes_.contains(names[i]))
        return Error::invalid(std::string(field) + ": unknown node " + names[i],
                              std::string(field) + "[" + std::to_string(i) + "]");
  }
  return ok_status();
}

Status ClusterState::admit_locked(const api::JobSpec& spec, const std::string& user, int64_t n) {
  const std::optional<int64_t> project_cap = projects_.max_active_jobs_per_user(spec.project);
  if (auto s = admit_jobs(active_counts_, opts_.limits, project_cap, user, spec.project, n); !s) {
    ++counters_.submissions_refused_total;
    return s;
  }
  active_counts_.add(user, spec.project, n);
  return ok_status();
}

void ClusterState::uncount_locked(const api::JobSpec& spec, const std::string& user, int64_t n) {
  active_counts_.add(user, spec.project, -n);
}

void ClusterState::count_changes_locked(const WriteBatch& batch) {
  // A job may be written twice in one batch: compare each record with the one before.
  std::unordered_map<int64_t, bool> written;
  for (const api::Job& nj : batch.jobs) {
    const int64_t key = job_key(nj.id);
    bool was = false;
    if (auto w = written.find(key); w != written.end()) {
      was = w->second;
    } else {
      auto it = jobs_.find(key);
      if (it == jobs_.end()) continue;  // New: its submission counted it.
      was = counts_as_active(it->second.job);
    }
    const bool is = counts_as_active(nj);
    written[key] = is;
    if (is != was) active_counts_.add(nj, is ? 1 : -1);
  }
}

std::optional<api::Job> ClusterState::job(const std::string& id) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(job_key(id));
  if (it == jobs_.end() || it->second.job.id != id) return std::nullopt;
  return view_locked(it->first, it->second);
}

api::Job ClusterState::view_of(const JobEntry& e) {
  api::Job j = e.job;
  if (j.state == api::JobState::pending) {
    j.queue_position = e.queue_position;
    j.estimated_start_ms = e.estimated_start_ms;
  }
  return j;
}

JobPage ClusterState::list_jobs(const JobFilter& f) const {
  MutexLock lk(mu_);
  JobPage page;
  size_t bytes = 0;
  auto it = jobs_.end();
  if (!f.after.empty()) it = jobs_.lower_bound(job_key(f.after));
  while (it != jobs_.begin()) {
    --it;
    const auto& j = it->second.job;
    if (jobs_.is_array(it->first)) continue;  // Elements are listed, their parents not.
    if (f.state && j.state != *f.state) continue;
    if (!f.user.empty() && j.user != f.user) continue;
    if (static_cast<int>(page.jobs.size()) == f.limit) {
      page.next = page.jobs.back().id;
      break;
    }
    api::Job view = view_locked(it->first, it->second);
    // The fixed fields take well under a kilobyte; an allocation about 100 bytes.
    const size_t size = api::spec_payload_bytes(view.spec) + 1024 + 128 * j.allocations.size();
    if (!page.jobs.empty() && bytes + size > f.max_bytes) {
      page.next = page.jobs.back().id;
      break;
    }
    bytes += size;
    page.jobs.push_back(std::move(view));
  }
  return page;
}

Result<api::Job> ClusterState::cancel(const std::string& id, const Principal& who) {
  MutexLock lk(mu_);
  auto it = jobs_.find(job_key(id));
  if (it == jobs_.end() || it->second.job.id != id) return Error::not_found("job " + id + " not found");
  const JobEntry& e = it->second;
  if (who.role != Role::admin && e.job.user != who.name)
    return Error::forbidden("job " + id + " belongs to another user");
  if (api::is_terminal(e.job.state)) return view_locked(it->first, e);
  Txn txn;
  const std::string reason = "cancelled by " + who.name;
  if (jobs_.is_array(it->first)) {
    cancel_array_locked(txn, it->first, reason);
  } else if (e.job.state == api::JobState::pending) {
    cancel_pending_locked(txn, e, reason);
  } else {
    stop_job_locked(txn, e, api::JobState::cancelled, reason, std::nullopt, false);
  }
  if (!commit_locked(txn, "cancel")) return storage_unavailable("the cancellation");
  return view_locked(it->first, it->second);
}

Result<LogTarget> ClusterState::log_target(const std::string& job_id, int rank) const {
  MutexLock lk(mu_);
  auto it = jobs_.find(job_key(job_id));
  if (it == jobs_.end() || it->second.job.id != job_id) return Error::not_found("job " + job_id + " not found");
  const api::Job& j = it->second.job;
  const int per_node = j.spec.task_per_device ? j.spec.devices : 1;
  if (rank < 0 || rank >= per_node * j.spec.nodes)
    return Error::not_found("rank " + std::to_string(rank) + " out of range");
  if (j.allocations.empty()) return Error::conflict("job " + job_id + " has not been placed yet");
  const int node_rank = rank / per_node;
  auto a = std::find_if(j.allocations.begin(), j.allocations.end(),
                        [&](const api::Allocation& x) { return x.rank == node_rank; });
  if (a == j.allocations.end()) return Error::internal("no allocation for node rank " + std::to_string(node_rank));
  auto n = nodes_.find(a->node);
  if (n == nodes_.end()) return Error::unavailable("node " + a->node + " unknown");
  if (n->second.rec.agent_port == 0) return Error::unavailable("node " + a->node + " serves no logs");
  return LogTarget{n->second.rec.address, n->second.rec.agent_port, api::assignment_id(j.id, j.attempt, node_rank),
                   rank % per_node, n->second.rec.scheduler_key};
}

Status ClusterState::write_store(const WriteBatch& batch) { return note_store_result(store_.write(batch)); }

Status ClusterState::note_store_result(Status s) {
  if (!s) ++store_write_failures_total_;
  storage_ok_ = s.ok();
  return s;
}

void ClusterState::complete_locked(Txn& txn) {
  settle_locked(txn);         // Arrays' parents, and the dependents of jobs ending here, in the same write.
  record_usage_locked(txn);   // And the usage records of the attempts ending here.
  record_events_locked(txn);  // Last: every job's state history, once the batch is complete.
}

void ClusterState::applied_locked(Txn& txn) {
  account_usage_locked(txn.batch);
  count_changes_locked(txn.batch);  // Before the apply steps change (or move) the jobs.
  for (auto& f : txn.apply) f();
  if (!txn.batch.jobs.empty() || !txn.batch.delete_jobs.empty()) ++jobs_changes_;
  if (!txn.batch.nodes.empty() || !txn.batch.delete_nodes.empty() || !txn.batch.put_fences.empty() ||
      !txn.batch.delete_fences.empty() || versions_of_nodes_.any_bumped())
    ++nodes_changes_;
  // Long polls hear of a change once all of it is applied: one answer per node.
  for (const auto& node : versions_of_nodes_.take_bumped()) answer_watches_locked(node);
}

bool ClusterState::commit_locked(Txn& txn, const char* what) {
  complete_locked(txn);
  if (auto s = write_store(txn.batch); !s) {
    spdlog::error("{}: store write failed, nothing changed: {}", what, s.error().message);
    return false;
  }
  applied_locked(txn);
  return true;
}

bool ClusterState::commit_queued(Txn& txn, const char* what) {
  complete_locked(txn);
  auto batch = std::make_shared<WriteBatch>(std::move(txn.batch));
  auto done = store_.write_queued(batch);  // Under mu_: the store commits in mu_'s order.
  // The caller's MutexLock still counts mu_ as held: it is held again before returning.
  mu_.unlock();
  Status s = note_store_result(done.get());
  mu_.lock();
  if (!s) {
    spdlog::error("{}: store write failed, nothing changed: {}", what, s.error().message);
    return false;
  }
  txn.batch = std::move(*batch);
  applied_locked(txn);
  return true;
}

void ClusterState::cancel_pending_locked(Txn& txn, const JobEntry& e, const std::string& reason) {
  api::Job nj = e.job;
  nj.state = api::JobState::cancelled;
  nj.reason = reason;
  nj.held_by.clear();
  nj.finished_at_ms = clock_.now_ms();
  txn.batch.jobs.push_back(nj);
  const int64_t seq = job_key(nj.id);
  txn.apply.push_back([this, nj, seq]() REQUIRES(mu_) {
    jobs_.at(seq).job = nj;
    jobs_.dequeue(seq);
    log_change(nj, "cancelled");
  });
}

void ClusterState::stop_job_locked(Txn& txn, const JobEntry& e, api::JobState final_state, const std::string& reason,
                                   std::optional<int> exit_code, bool retry, const std::string& preempted_by,
                                   const std::string& requeued_by) {
  const api::Job& j = e.job;
  std::vector<Fence> fences;
  std::set<std::string> nodes;
  for (const auto& a : j.allocations) {
    nodes.insert(a.node);
    auto aid = api::assignment_id(j.id, j.attempt, a.rank);
    auto r = e.reports.find(aid);
    bool gone = r != e.reports.end() && r->second.state != api::TaskState::running;
    if (!gone) fences.push_back(Fence{aid, j.id, a});
  }
  txn.batch.put_fences.insert(txn.batch.put_fences.end(), fences.begin(), fences.end());
  const bool preempted = !preempted_by.empty();
  // Attempts that ended by preemption used no retry.
  const bool requeue =
      preempted || !requeued_by.empty() || (retry && j.attempt - j.preemptions - j.requeues < j.spec.max_retries);
  const int64_t now = clock_.now_ms();
  api::Job nj = j;
  if (requeue) {
    nj.state = api::JobState::pending;
    nj.attempt = j.attempt + 1;
    nj.allocations.clear();
    nj.master_addr.clear();
    nj.master_port = 0;
    nj.endpoint.clear();
    nj.started_at_ms = 0;
    nj.exit_code.reset();
    nj.signals.clear();  // Sent to the attempt that ended.
    nj.reason = "requeued after attempt " + std::to_string(j.attempt) + ": " + reason;
    if (preempted) {
      nj.preemptions = j.preemptions + 1;
      nj.last_preempted_at_ms = now;
      nj.last_preempted_by = preempted_by;
      nj.reason = "preempted by " + preempted_by;
    }
    if (!requeued_by.empty()) {
      nj.requeues = j.requeues + 1;
      nj.reason = "requeued by " + requeued_by;
    }
  } else {
    nj.state = final_state;
    nj.finished_at_ms = now;
    nj.exit_code = exit_code;
    nj.reason = reason;
    measured_use(e, nj.cpu_seconds, nj.max_rss_mib);
  }
  txn.batch.jobs.push_back(nj);
  const int64_t seq = job_key(j.id);
  txn.apply.push_back([this, nj, fences, nodes, seq, requeue, now]() REQUIRES(mu_) {
    alloc_.release(nj.id);
    for (const auto& f : fences) {
      alloc_.hold(f.id, {f.allocation}, std::nullopt);
      nodes_.fence(f);
    }
    JobEntry& entry = jobs_.at(seq);
    entry.job = nj;
    entry.reports.clear();
    active_.erase(seq);
    if (requeue) {
      jobs_.queue(seq);
      entry.queued_at_ms = now;
    }
    for (const auto& n : nodes) bump_locked(n);
    log_change(nj, fences.empty() ? "stopped" : "stopped, " + std::to_string(fences.size()) + " rank(s) fenced");
    mark_dirty_locked();
  });
}

void ClusterState::log_change(const api::Job& job, const std::string& what) const {
  std::string where;
  for (const auto& a : job.allocations) {
    if (!where.empty()) where += ' ';
    where += a.node + ":[";
    for (size_t i = 0; i < a.module_ids.size(); ++i) where += (i ? "," : "") + std::to_string(a.module_ids[i]);
    where += "]";
  }
  spdlog::info("job {} {} ({}) attempt={} cards={} reason=\"{}\"", job.id, api::to_string(job.state), what, job.attempt,
               where.empty() ? "-" : where, log_safe(job.reason));
}

}  // namespace tessel::scheduler
