// ClusterState: submitting, the one path for every job. prepare_submission_locked()
// checks and admits the spec and builds the records (a job, or an array's parent and
// its elements); submit() writes them; file_submission_locked() files the written
// records in memory and queues what may run.
#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

Result<api::Job> ClusterState::submit(api::JobSpec spec, const std::string& user) {
  MutexLock lk(mu_);
  auto sub = prepare_submission_locked(std::move(spec), user);
  if (!sub) return sub.error();
  const std::string what = sub->indices.empty() ? "the job" : "the array";
  const bool ended = sub->check.verdict == DepCheck::Verdict::never;
  if (ended) uncount_locked(sub->jobs.front().spec, user, sub->count);  // Ended at birth: counts against no limit.
  if (sub->jobs.front().spec.has_dependencies()) {
    // Written under mu_, so none of its dependencies can end unseen meanwhile.
    Txn txn;
    txn.batch.jobs = std::move(sub->jobs);
    txn.apply.push_back([this, &txn, &sub]() REQUIRES(mu_) {
      sub->jobs = std::move(txn.batch.jobs);  // Written: filed in memory without a copy.
      file_submission_locked(*sub);
    });
    if (!commit_locked(txn, "submit")) {  // The batch still holds the records.
      if (!ended) uncount_locked(txn.batch.jobs.front().spec, user, sub->count);
      return storage_unavailable(what);
    }
  } else {
    // Waits for the group commit without holding mu_: nothing knows these ids before
    // they are written.
    WriteBatch b;
    b.jobs = std::move(sub->jobs);
    lk.unlock();
    Status s = write_store(b);
    lk.lock();
    if (!s) {
      uncount_locked(b.jobs.front().spec, user, sub->count);
      return storage_unavailable(what, s.error().message);
    }
    sub->jobs = std::move(b.jobs);
    file_submission_locked(*sub);
  }
  return view_locked(sub->key, jobs_.at(sub->key));
}

Result<ClusterState::Submission> ClusterState::prepare_submission_locked(api::JobSpec spec, const std::string& user) {
  if (stopping_) return Error::unavailable("scheduler is shutting down");
  if (auto s = resolve_project_locked(spec); !s) return s.error();
  if (auto s = check_node_names_locked(spec); !s) return s.error();
  // An image runs only where an agent runs images (tessel/api/reserved_labels.hpp).
  if (!spec.image.empty()) spec.constraints.node_selector.emplace(api::kImagesLabel, "true");
  Submission sub;
  const int64_t seq = jobs_.next_seq();
  api::Job job = make_job(seq, std::move(spec), user);
  const bool deps = job.spec.has_dependencies();
  if (deps)
    if (auto s = validate_dependencies_locked(job.spec, job.id); !s) return s.error();
  if (job.spec.array) {
    sub.indices = api::array_indices(*job.spec.array);
    sub.count = static_cast<int64_t>(sub.indices.size());
    if (auto s = admit_array_size(opts_.limits, static_cast<int>(sub.count)); !s) return s.error();
  }
  if (auto s = admit_locked(job.spec, user, sub.count); !s) return s.error();
  jobs_.reserve_seq();  // Only now: a refused submission takes no id.
  sub.key = key_of_seq(seq);
  // Every element has the parent's dependencies: one check holds for all.
  if (deps) sub.check = check_dependencies_locked(job.spec);
  job.reason = sub.check.reason;
  if (sub.check.verdict == DepCheck::Verdict::never) {  // E.g. after_ok on a job that already failed.
    job.state = api::JobState::cancelled;
    job.finished_at_ms = job.submitted_at_ms;
  }
  sub.jobs.reserve(sub.indices.size() + 1);
  sub.jobs.push_back(std::move(job));
  if (!sub.indices.empty()) {
    // The elements share the parent's command, env and workdir (held and stored once):
    // a big spec costs one copy per array, not one per element.
    api::Job element = sub.jobs.front();
    api::share_parent_spec(element);
    const std::string parent_id = element.id;
    for (int index : sub.indices) {
      sub.jobs.push_back(element);
      sub.jobs.back().id = api::array_element_id(parent_id, index);
    }
  }
  return sub;
}

void ClusterState::file_submission_locked(Submission& sub) {
  const bool ended = sub.check.verdict == DepCheck::Verdict::never;
  api::Job& first = sub.jobs.front();
  const int64_t at = first.submitted_at_ms;
  if (sub.indices.empty()) {
    JobEntry& entry = jobs_.put(sub.key, JobEntry{std::move(first), at, {}, 0, std::nullopt});
    log_change(entry.job, "submitted");
    if (!ended) enqueue_locked(sub.key, entry, sub.check);
  } else {
    ArrayCounts& info = jobs_.add_array(sub.key, static_cast<int>(sub.count), first.spec.array->parallel);
    info.states[static_cast<size_t>(first.state)] = info.count;
    jobs_.put(sub.key, JobEntry{std::move(first), at, {}, 0, std::nullopt});
    for (size_t i = 0; i < sub.indices.size(); ++i) {
      const int64_t k = sub.key + sub.indices[i] + 1;  // As job_key() of the element's id.
      JobEntry& entry = jobs_.put(k, JobEntry{std::move(sub.jobs[i + 1]), at, {}, 0, std::nullopt});
      if (!ended) enqueue_locked(k, entry, sub.check);
    }
    const api::Job& p = jobs_.at(sub.key).job;
    spdlog::info("job {} {} (array of {}, at most {} at once, submitted) reason=\"{}\"", p.id, api::to_string(p.state),
                 info.count, info.parallel, p.reason);
  }
  counters_.submissions_total += static_cast<uint64_t>(sub.count);
  ++jobs_changes_;
}

}  // namespace tessel::scheduler
