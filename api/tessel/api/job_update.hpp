#pragma once
// The body of PATCH /v1/jobs/{id} (issue 31, Slurm's scontrol update): the fields of a
// pending job's spec a user may change. Pure; callable from any thread.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::api {

struct JobUpdate {
  std::optional<int> priority;                                                // -1000..1000.
  std::optional<int64_t> time_limit_s;                                        // 1 s .. 366 days.
  std::optional<std::string> name;                                            // At most 256 bytes.
  std::optional<std::vector<std::string>> after_ok, after_any, after_not_ok;  // Replace the list.
  bool empty() const { return !priority && !time_limit_s && !name && !after_ok && !after_any && !after_not_ok; }
};

// Each field checked as a submission's is (same bounds, same messages); any other
// field, or none at all, is a 400 naming it.
Result<JobUpdate> parse_job_update(const nlohmann::json& body);

}  // namespace tessel::api
