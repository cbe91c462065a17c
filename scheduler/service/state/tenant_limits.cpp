#include "tessel/scheduler/tenant_limits.hpp"

namespace tessel::scheduler {

bool counts_as_active(const api::Job& job) {
  if (api::is_terminal(job.state)) return false;
  return !job.spec.array || job.id.find('_') != std::string::npos;  // Parents have no "_<index>".
}

void ActiveJobCounts::add(const std::string& user, const std::string& project, int64_t delta) {
  if (delta == 0) return;
  auto bump = [delta](auto& map, const auto& key) {
    auto it = map.try_emplace(key, 0).first;
    it->second += delta;
    if (it->second <= 0) map.erase(it);
  };
  bump(by_user_, user);
  bump(by_project_, project);
  bump(by_project_user_, std::make_pair(project, user));
  total_ += delta;
}

int64_t ActiveJobCounts::of_user(const std::string& user) const {
  auto it = by_user_.find(user);
  return it == by_user_.end() ? 0 : it->second;
}

int64_t ActiveJobCounts::of_user_in(const std::string& project, const std::string& user) const {
  auto it = by_project_user_.find({project, user});
  return it == by_project_user_.end() ? 0 : it->second;
}

int64_t ActiveJobCounts::of_project(const std::string& project) const {
  auto it = by_project_.find(project);
  return it == by_project_.end() ? 0 : it->second;
}

void ActiveJobCounts::clear() {
  by_user_.clear();
  by_project_.clear();
  by_project_user_.clear();
  total_ = 0;
}

namespace {
Error exhausted(const std::string& who, int64_t count, int64_t limit, const std::string& limit_name, int64_t n) {
  return Error{who + " has " + std::to_string(count) + " jobs not yet ended and may have at most " +
                   std::to_string(limit) + " (" + limit_name + "); this submission adds " + std::to_string(n) +
                   ": wait for some to end, or cancel some",
               ErrorCode::resource_exhausted};
}
}  // namespace

Status admit_jobs(const ActiveJobCounts& counts, const TenantLimits& limits, std::optional<int64_t> project_cap,
                  const std::string& user, const std::string& project, int64_t n) {
  if (project_cap && *project_cap > 0 && counts.of_user_in(project, user) + n > *project_cap)
    return exhausted("user " + user + " in project " + project, counts.of_user_in(project, user), *project_cap,
                     "the project's max_active_jobs_per_user", n);
  if (limits.max_active_jobs_per_user > 0 && counts.of_user(user) + n > limits.max_active_jobs_per_user)
    return exhausted("user " + user, counts.of_user(user), limits.max_active_jobs_per_user,
                     "--max-active-jobs-per-user", n);
  if (limits.max_active_jobs > 0 && counts.total() + n > limits.max_active_jobs)
    return exhausted("the scheduler", counts.total(), limits.max_active_jobs, "--max-active-jobs, all users", n);
  return ok_status();
}

Status admit_array_size(const TenantLimits& limits, int64_t elements) {
  if (limits.max_array_size <= 0 || elements <= limits.max_array_size) return ok_status();
  return Error{"array.count: this scheduler takes at most " + std::to_string(limits.max_array_size) +
                   " array elements in one submission (--max-array-size); this one has " + std::to_string(elements),
               ErrorCode::permission_denied, "array.count"};
}

}  // namespace tessel::scheduler
