// libFuzzer: a project body as POST/PUT /v1/projects receives it (shares, quotas and
// the per-user limit of jobs not yet ended), and the tenant-limit check on what it
// accepts: what is accepted round-trips, and a limit's decision is consistent.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "tessel/api/project.hpp"
#include "tessel/scheduler/tenant_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto parsed = tessel::api::parse_project(j);
  if (!parsed) return 0;
  auto again = tessel::api::parse_project(tessel::api::to_json(*parsed));
  if (!again || !(*again == *parsed)) __builtin_trap();
  // The project's limit against counts around it: admitted exactly when under it.
  const auto cap = parsed->max_active_jobs_per_user;
  if (!cap) return 0;
  tessel::scheduler::ActiveJobCounts counts;
  counts.add("u", parsed->name, *cap - 1);
  tessel::scheduler::TenantLimits none{0, 0, tessel::api::kMaxArrayCount};
  if (!tessel::scheduler::admit_jobs(counts, none, cap, "u", parsed->name, 1).ok()) __builtin_trap();
  if (tessel::scheduler::admit_jobs(counts, none, cap, "u", parsed->name, 2).ok()) __builtin_trap();
  return 0;
}
