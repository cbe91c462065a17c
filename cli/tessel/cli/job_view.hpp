#pragma once
// Human views of the API's Job JSON: the `tessel jobs` table and `tessel show`.
// Pure functions: JSON and the current time in, text out.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tessel::cli {

// Table with columns ID NAME USER STATE PRIO CARDS NODES AGE REASON/NODELIST.
// CARDS is devices per node times nodes; AGE counts from submitted_at;
// the last column is "(reason)" for pending jobs, the allocated node list for
// others, with the reason or exit code appended for failed ones.
std::string render_jobs_table(const nlohmann::json& jobs, int64_t now_ms);

// "Key: value" lines describing one job, including its allocations, then its state
// history when the JSON carries one ("events", as GET /v1/jobs/{id}/events serves it).
std::string render_job_detail(const nlohmann::json& job, int64_t now_ms);

// The argv joined for display, quoting arguments that need it ('a b' -> "'a b'").
std::string quote_command(const nlohmann::json& argv);

// True when the job JSON's state is succeeded, failed or cancelled.
bool job_is_terminal(const nlohmann::json& job);

}  // namespace tessel::cli
