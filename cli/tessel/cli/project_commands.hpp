#pragma once
// `tessel project list|show|create|set|delete`: projects, their shares and quotas
// (/v1/projects; writes need an admin token). Each returns the process exit code
// (see app.hpp) and prints through the Session.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/cli/session.hpp"

namespace tessel::cli {

struct ProjectOptions {
  std::string name;
  std::optional<int64_t> shares;
  // --quota MODEL=MAX or MODEL=GUARANTEED:MAX ("*" for any model; MAX "none": no limit).
  std::vector<std::string> quotas;
  // Jobs not yet ended one user may have in the project (array elements each).
  std::optional<int64_t> max_active_jobs_per_user;
};

int cmd_project_list(Session& s);
int cmd_project_show(Session& s, const std::string& name);
// create: POST (fails when it exists); set: PUT (creates or replaces it whole).
int cmd_project_write(Session& s, const ProjectOptions& o, bool create);
int cmd_project_delete(Session& s, const std::string& name);

// "HL-225=4:16" -> {"HL-225", {"guaranteed": 4, "max": 16}}; errors name the flag.
Result<std::pair<std::string, nlohmann::json>> parse_quota_flag(const std::string& text);

}  // namespace tessel::cli
