#pragma once
// Subcommands about jobs: submit, jobs, show, cancel, hold, release, signal, update,
// requeue, logs, wait.
// Each returns the process exit code (see app.hpp) and prints through the Session.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/cli/session.hpp"
#include "tessel/cli/submit_args.hpp"

namespace tessel::cli {

int cmd_submit(Session& s, const SubmitOptions& o);

struct JobsOptions {
  std::string state;  // Server-side filter; empty: non-terminal jobs unless `all`.
  bool all = false;
  std::string user;
};
int cmd_jobs(Session& s, const JobsOptions& o);

int cmd_show(Session& s, const std::string& id);
int cmd_cancel(Session& s, const std::vector<std::string>& ids);
// POST /v1/jobs/{id}/<action> (cancel, hold, release, requeue) for each id; prints each job's
// state (a pending one's reason: "held by alice"). 1 when any was refused.
int cmd_control(Session& s, const std::string& action, const std::vector<std::string>& ids);
// PATCH /v1/jobs/{id}: what is given of priority, time limit (a duration) and name.
struct UpdateOptions {
  std::string id;
  std::optional<int> priority;
  std::optional<std::string> time_limit;
  std::optional<std::string> name;
};
int cmd_update(Session& s, const UpdateOptions& o);
// POST /v1/jobs/{id}/signal: `name` as USR1 or SIGUSR1.
int cmd_signal(Session& s, const std::string& id, const std::string& name);

struct LogsOptions {
  std::string id;
  int rank = 0;
  bool follow = false;
};
int cmd_logs(Session& s, const LogsOptions& o);

struct WaitOptions {
  std::string id;
  std::optional<std::string> timeout;  // A duration; none: wait forever.
};
int cmd_wait(Session& s, const WaitOptions& o);

// The exit code `tessel wait` gives for a terminal job (see app.hpp).
int exit_code_for_job(const nlohmann::json& job);

}  // namespace tessel::cli
