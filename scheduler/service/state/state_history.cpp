// ClusterState: accounting (a usage record per ended attempt, written with the
// change that ends it) and history retention (ended jobs pruned after
// --history-days, their usage records kept).
//
// Pruning and dependencies: a job pruned from history is unknown to the scheduler,
// so a new submission that depends on it is refused (400 naming the field, as for any
// unknown job). A job that a job not yet ended depends on is never pruned: a waiting
// job still needs its state, and one restored after a restart has its dependencies
// checked again.
#include <algorithm>
#include <cstddef>
#include <set>

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

bool holds_cards(api::JobState s) { return s == api::JobState::assigned || s == api::JobState::running; }

constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;
constexpr size_t kBackfillBatch = 10'000;

int64_t total_cards(const UsageRecord& u) {
  int64_t n = 0;
  for (const auto& [_, c] : u.cards) n += c;
  return n;
}

}  // namespace

void ClusterState::measured_use(const JobEntry& e, std::optional<double>& cpu_seconds,
                                std::optional<int64_t>& max_rss_mib) {
  cpu_seconds.reset();
  max_rss_mib.reset();
  for (const auto& a : e.job.allocations) {
    auto r = e.reports.find(api::assignment_id(e.job.id, e.job.attempt, a.rank));
    if (r == e.reports.end()) continue;
    if (r->second.cpu_seconds) cpu_seconds = cpu_seconds.value_or(0) + *r->second.cpu_seconds;
    if (r->second.max_rss_mib) max_rss_mib = std::max(max_rss_mib.value_or(0), *r->second.max_rss_mib);
  }
}

UsageRecord ClusterState::usage_record_locked(const api::Job& attempt, int64_t end_ms) const {
  UsageRecord u{attempt.id, attempt.attempt,     attempt.spec.project, attempt.user, {}, attempt.started_at_ms, end_ms,
                0,          attempt.cpu_seconds, attempt.max_rss_mib};
  for (const auto& a : attempt.allocations) u.cpus += a.cpus;
  // The model each card has in its node's inventory; a node since removed falls back
  // to the model the job asked for.
  const std::string fallback = attempt.spec.model.empty() ? "unknown" : attempt.spec.model;
  for (const auto& a : attempt.allocations) {
    auto n = nodes_.find(a.node);
    for (int m : a.module_ids) {
      const std::string* model = &fallback;
      if (n != nodes_.end())
        for (const auto& d : n->second.rec.inventory.devices)
          if (d.module_id == m) model = &d.model;
      ++u.cards[*model];
    }
  }
  return u;
}

void ClusterState::record_usage_locked(Txn& txn) {
  const int64_t now = clock_.now_ms();
  std::set<std::string> seen;
  for (const auto& nj : txn.batch.jobs) {
    if (holds_cards(nj.state)) continue;
    auto it = jobs_.find(job_key(nj.id));
    if (it == jobs_.end()) continue;
    const api::Job& before = it->second.job;
    if (!holds_cards(before.state) || before.started_at_ms <= 0) continue;  // Never ran: no card-seconds.
    UsageRecord u = usage_record_locked(before, nj.finished_at_ms > 0 ? nj.finished_at_ms : now);
    measured_use(it->second, u.cpu_seconds, u.max_rss_mib);  // This attempt's, also when it is requeued.
    if (u.end_ms <= u.start_ms || !seen.insert(u.key()).second) continue;
    txn.batch.put_usage.push_back(std::move(u));
  }
}

void ClusterState::account_usage_locked(const WriteBatch& batch) {
  for (const auto& u : batch.put_usage) {
    usage_.add(u.project, u.user, total_cards(u), u.start_ms, u.end_ms);
    book_.add(u);
  }
}

Status ClusterState::backfill_usage_locked() {
  std::vector<UsageRecord> missing;
  for (const auto& [seq, e] : jobs_) {
    const api::Job& j = e.job;
    if (!api::is_terminal(j.state) || j.started_at_ms <= 0 || j.finished_at_ms <= j.started_at_ms) continue;
    UsageRecord u = usage_record_locked(j, j.finished_at_ms);
    if (!book_.has(u.key())) missing.push_back(std::move(u));
  }
  for (size_t i = 0; i < missing.size(); i += kBackfillBatch) {
    Txn txn;
    const auto first = missing.begin() + static_cast<std::ptrdiff_t>(i);
    txn.batch.put_usage.assign(first,
                               first + static_cast<std::ptrdiff_t>(std::min(kBackfillBatch, missing.size() - i)));
    if (!commit_locked(txn, "usage backfill"))
      return Error::unavailable("writing usage records of jobs ended before accounting: store write failed");
  }
  if (!missing.empty())
    spdlog::info("accounting: wrote usage records of {} jobs that ended before it existed", missing.size());
  return ok_status();
}

Result<size_t> ClusterState::prune_history(size_t max_jobs) {
  MutexLock lk(mu_);
  if (opts_.history_days <= 0 || stopping_ || max_jobs == 0) return size_t{0};
  const int64_t cutoff = clock_.now_ms() - opts_.history_days * kDayMs;
  // Kept: what jobs not yet ended depend on, and jobs whose cards are still fenced.
  std::set<std::string> keep;
  auto keep_dependencies = [&keep](const api::JobSpec& spec) {
    for (const auto* ids : {&spec.after_ok, &spec.after_any, &spec.after_not_ok}) keep.insert(ids->begin(), ids->end());
  };
  for (const auto& [_, e] : jobs_.pending()) keep_dependencies(e->job.spec);
  for (const auto& [_, e] : jobs_.waiting()) keep_dependencies(e->job.spec);
  for (const auto& [_, e] : jobs_.held()) keep_dependencies(e->job.spec);
  for (int64_t seq : active_) keep_dependencies(jobs_.at(seq).job.spec);
  for (const auto& [_, f] : nodes_.fences()) keep.insert(f.job_id);
  Txn txn;
  // Sequences follow submission times: the scan stops at the first job submitted
  // after the cutoff, which cannot have finished before it.
  for (const auto& [seq, e] : jobs_) {
    const api::Job& j = e.job;
    if (j.submitted_at_ms >= cutoff || txn.batch.delete_jobs.size() == max_jobs) break;
    const int64_t finished = j.finished_at_ms > 0 ? j.finished_at_ms : j.submitted_at_ms;
    if (!api::is_terminal(j.state) || finished >= cutoff || keep.count(j.id)) continue;
    txn.batch.delete_jobs.push_back(j.id);
  }
  // An array's parent holds the spec its elements share: it goes last, with the
  // last of them, never before.
  std::set<int64_t> deleting;
  for (const auto& id : txn.batch.delete_jobs) deleting.insert(job_key(id));
  auto& del = txn.batch.delete_jobs;
  del.erase(std::remove_if(del.begin(), del.end(),
                           [&](const std::string& id) REQUIRES(mu_) {
                             const int64_t key = job_key(id);
                             if (!jobs_.is_array(key)) return false;
                             for (auto it = jobs_.upper_bound(key); it != jobs_.end() && parent_key(it->first) == key;
                                  ++it)
                               if (!deleting.count(it->first)) return true;
                             return false;
                           }),
            del.end());
  if (txn.batch.delete_jobs.empty()) return size_t{0};
  const std::vector<std::string> ids = txn.batch.delete_jobs;
  txn.apply.push_back([this, ids]() REQUIRES(mu_) {
    for (const auto& id : ids) jobs_.erase(job_key(id));
  });
  if (!commit_locked(txn, "history pruning")) return storage_unavailable("the pruning of old jobs");
  spdlog::info("history: pruned {} jobs that ended more than {} days ago ({} .. {})", ids.size(), opts_.history_days,
               ids.front(), ids.back());
  return ids.size();
}

}  // namespace tessel::scheduler
