#pragma once
// Per-tenant limits on what the scheduler holds (Slurm's MaxJobCount and
// MaxSubmitJobs): jobs not yet ended, counted by user, by user within a project,
// and in all. A submission that would pass a limit is refused whole (429, nothing
// stored) with a message naming the limit and the current count.
//
// ActiveJobCounts is plain data; ClusterState keeps one under its mutex and updates
// it as jobs are submitted and end. An array counts its elements, not its parent.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "tessel/api/job.hpp"
#include "tessel/base/result.hpp"

namespace tessel::scheduler {

struct TenantLimits {
  // 0: no limit.
  int64_t max_active_jobs = 500'000;          // All users together (--max-active-jobs).
  int64_t max_active_jobs_per_user = 50'000;  // Each user (--max-active-jobs-per-user).
  int max_array_size = api::kMaxArrayCount;   // Elements in one submission (--max-array-size).
};

// Whether a job counts: not ended, and not an array's parent (its elements count).
bool counts_as_active(const api::Job& job);

class ActiveJobCounts {
 public:
  // Adds `delta` (negative to take away) jobs of `user` in `project`.
  void add(const std::string& user, const std::string& project, int64_t delta);
  // As add(), for a job that counts_as_active().
  void add(const api::Job& job, int64_t delta) { add(job.user, job.spec.project, delta); }
  int64_t of_user(const std::string& user) const;
  int64_t of_user_in(const std::string& project, const std::string& user) const;
  int64_t of_project(const std::string& project) const;
  int64_t total() const { return total_; }
  // Users with jobs counted, for /metrics.
  const std::unordered_map<std::string, int64_t>& by_user() const { return by_user_; }
  void clear();

 private:
  std::unordered_map<std::string, int64_t> by_user_;
  std::unordered_map<std::string, int64_t> by_project_;
  std::map<std::pair<std::string, std::string>, int64_t> by_project_user_;  // (project, user).
  int64_t total_ = 0;
};

// Whether `n` more active jobs of `user` in `project` fit, given what `counts` holds
// (in-flight submissions included by the caller) and `project_cap`, the project's own
// per-user limit if it sets one. resource_exhausted (429) naming the limit and the
// count otherwise.
Status admit_jobs(const ActiveJobCounts& counts, const TenantLimits& limits, std::optional<int64_t> project_cap,
                  const std::string& user, const std::string& project, int64_t n);

// permission_denied (403) naming `array.count` when an array has more elements than
// the scheduler takes in one submission.
Status admit_array_size(const TenantLimits& limits, int64_t elements);

}  // namespace tessel::scheduler
