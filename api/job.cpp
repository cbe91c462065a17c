#include "tessel/api/job.hpp"

#include <array>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "tessel/api/topology.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {
constexpr size_t kMaxArgs = 4096;
constexpr size_t kMaxArgLen = 65536;
constexpr size_t kMaxEnv = 1024;
constexpr size_t kMaxEnvValue = 65536;

bool valid_env_name(const std::string& k) {
  if (k.empty() || k.size() > 256) return false;
  for (char c : k)
    if (c == '=' || c == '\0') return false;
  return true;
}
}  // namespace

bool is_reserved_env(const std::string& name) {
  static const std::array<const char*, 12> reserved = {"HABANA_VISIBLE_MODULES",
                                                       "HABANA_VISIBLE_DEVICES",
                                                       "CUDA_VISIBLE_DEVICES",
                                                       "HLS_MODULE_ID",
                                                       "RANK",
                                                       "WORLD_SIZE",
                                                       "LOCAL_RANK",
                                                       "LOCAL_WORLD_SIZE",
                                                       "NODE_RANK",
                                                       "MASTER_ADDR",
                                                       "MASTER_PORT",
                                                       "GROUP_RANK"};
  for (const char* r : reserved)
    if (name == r) return true;
  return name.rfind("TESSEL_", 0) == 0;
}

SpecParse parse_job_spec(const json& j) {
  SpecParse out;
  if (!j.is_object()) {
    out.error = FieldError{"", "body must be a JSON object"};
    return out;
  }
  JobSpec s;
  FieldReader r(j, "");
  r.optional_string("name", s.name, 256);
  if (!r.has("command")) {
    r.fail("command", "is required");
  } else if (!j["command"].is_array()) {
    r.fail("command", "must be an array of strings");
  } else if (j["command"].empty()) {
    r.fail("command", "must not be empty");
  } else if (j["command"].size() > kMaxArgs) {
    r.fail("command", "more than " + std::to_string(kMaxArgs) + " arguments");
  } else {
    for (const auto& a : j["command"]) {
      if (!a.is_string()) {
        r.fail("command", "must be an array of strings");
        break;
      }
      const auto& str = a.get_ref<const std::string&>();
      if (str.size() > kMaxArgLen || str.find('\0') != std::string::npos) {
        r.fail("command", "argument too long or contains NUL");
        break;
      }
      s.command.push_back(str);
    }
    if (!s.command.empty() && s.command[0].empty()) r.fail("command", "program name must not be empty");
  }
  if (r.has("env")) {
    const auto& e = j["env"];
    if (!e.is_object()) {
      r.fail("env", "must be an object of strings");
    } else if (e.size() > kMaxEnv) {
      r.fail("env", "more than " + std::to_string(kMaxEnv) + " variables");
    } else {
      for (const auto& [k, v] : e.items()) {
        if (!valid_env_name(k)) {
          r.fail("env", "invalid variable name '" + k.substr(0, 64) + "'");
          break;
        }
        if (is_reserved_env(k)) {
          r.fail("env." + k, "is set by the scheduler and may not be overridden");
          break;
        }
        if (!v.is_string()) {
          r.fail("env." + k, "must be a string");
          break;
        }
        const auto& str = v.get_ref<const std::string&>();
        if (str.size() > kMaxEnvValue || str.find('\0') != std::string::npos) {
          r.fail("env." + k, "value too long or contains NUL");
          break;
        }
        s.env[k] = str;
      }
    }
  }
  r.optional_string("workdir", s.workdir, 4096);
  if (!s.workdir.empty() && s.workdir[0] != '/') r.fail("workdir", "must be an absolute path");
  if (r.has("devices")) {
    r.optional_int("devices", s.devices, 0, 8);
    if (!is_valid_group_size(s.devices)) r.fail("devices", "must be one of 0, 1, 2, 4, 8");
  }
  r.optional_int("nodes", s.nodes, 1, 4096);
  if (r.has("tasks_per_node")) {
    const auto& t = j["tasks_per_node"];
    if (t.is_string() && t.get<std::string>() == "device") {
      s.task_per_device = true;
    } else if (!(t.is_number_integer() && t.get<int64_t>() == 1)) {
      r.fail("tasks_per_node", "must be 1 or \"device\"");
    }
  }
  r.optional_int("priority", s.priority, -1000, 1000);
  r.optional_int("max_retries", s.max_retries, 0, 10);
  r.optional_int("time_limit_s", s.time_limit_s, 1, 366LL * 24 * 3600);
  r.optional_int("kill_grace_s", s.kill_grace_s, 0, 3600);
  if (r.has("vendor")) {
    std::string v;
    r.optional_string("vendor", v, 16);
    auto pv = parse_vendor(v);
    if (pv)
      s.vendor = *pv;
    else
      r.fail("vendor", "must be \"habana\" or \"nvidia\"");
  }
  r.optional_string("model", s.model, 64);
  if (s.task_per_device && s.devices == 0) r.fail("tasks_per_node", "\"device\" needs devices > 0");
  if (auto e = r.finish_field()) {
    out.error = e;
    return out;
  }
  out.spec = std::move(s);
  return out;
}

json to_json(const JobSpec& s) {
  json j = {{"name", s.name},
            {"command", s.command},
            {"env", s.env},
            {"devices", s.devices},
            {"nodes", s.nodes},
            {"priority", s.priority},
            {"max_retries", s.max_retries}};
  if (s.task_per_device)
    j["tasks_per_node"] = "device";
  else
    j["tasks_per_node"] = 1;
  if (!s.workdir.empty()) j["workdir"] = s.workdir;
  if (s.time_limit_s) j["time_limit_s"] = *s.time_limit_s;
  if (s.kill_grace_s) j["kill_grace_s"] = *s.kill_grace_s;
  if (s.vendor) j["vendor"] = to_string(*s.vendor);
  if (!s.model.empty()) j["model"] = s.model;
  return j;
}

std::string to_string(JobState s) {
  switch (s) {
    case JobState::pending: return "pending";
    case JobState::assigned: return "assigned";
    case JobState::running: return "running";
    case JobState::succeeded: return "succeeded";
    case JobState::failed: return "failed";
    case JobState::cancelled: return "cancelled";
  }
  return "unknown";
}

std::optional<JobState> parse_job_state(const std::string& s) {
  for (auto st : {JobState::pending, JobState::assigned, JobState::running, JobState::succeeded, JobState::failed,
                  JobState::cancelled})
    if (to_string(st) == s) return st;
  return std::nullopt;
}

bool is_terminal(JobState s) { return s == JobState::succeeded || s == JobState::failed || s == JobState::cancelled; }

json to_json(const Allocation& a) {
  return {{"node", a.node}, {"rank", a.rank}, {"module_ids", a.module_ids}, {"indices", a.indices}};
}

Result<Allocation> allocation_from_json(const json& j) {
  try {
    Allocation a;
    a.node = j.at("node").get<std::string>();
    a.rank = j.at("rank").get<int>();
    a.module_ids = j.at("module_ids").get<std::vector<int>>();
    a.indices = j.at("indices").get<std::vector<int>>();
    return a;
  } catch (const json::exception& e) {
    return Error{std::string("allocation: ") + e.what()};
  }
}

std::string format_rfc3339(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
  return buf;
}

std::optional<int64_t> parse_rfc3339(const std::string& s) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

json to_json(const Job& job) {
  json allocs = json::array();
  for (const auto& a : job.allocations) allocs.push_back(to_json(a));
  json j = {{"id", job.id},
            {"name", job.name},
            {"user", job.user},
            {"state", to_string(job.state)},
            {"spec", to_json(job.spec)},
            {"attempt", job.attempt},
            {"submitted_at", format_rfc3339(job.submitted_at_ms)},
            {"allocations", allocs}};
  if (!job.reason.empty()) j["reason"] = job.reason;
  if (job.started_at_ms) j["started_at"] = format_rfc3339(job.started_at_ms);
  if (job.finished_at_ms) j["finished_at"] = format_rfc3339(job.finished_at_ms);
  if (job.exit_code) j["exit_code"] = *job.exit_code;
  if (!job.master_addr.empty()) {
    j["master_addr"] = job.master_addr;
    j["master_port"] = job.master_port;
  }
  if (!job.endpoint.empty()) j["endpoint"] = job.endpoint;
  return j;
}

Result<Job> job_from_json(const json& j) {
  try {
    Job job;
    job.id = j.at("id").get<std::string>();
    job.name = j.value("name", "");
    job.user = j.value("user", "");
    auto st = parse_job_state(j.at("state").get<std::string>());
    if (!st) return Error{"job.state: unknown state"};
    job.state = *st;
    job.reason = j.value("reason", "");
    auto sp = parse_job_spec(j.at("spec"));
    if (!sp.spec) return Error{"job.spec: " + sp.error->message};
    job.spec = *sp.spec;
    job.attempt = j.value("attempt", 0);
    job.submitted_at_ms = parse_rfc3339(j.value("submitted_at", "")).value_or(0);
    job.started_at_ms = parse_rfc3339(j.value("started_at", "")).value_or(0);
    job.finished_at_ms = parse_rfc3339(j.value("finished_at", "")).value_or(0);
    if (j.contains("exit_code") && !j["exit_code"].is_null()) job.exit_code = j["exit_code"].get<int>();
    for (const auto& a : j.value("allocations", json::array())) {
      auto al = allocation_from_json(a);
      if (!al) return al.error();
      job.allocations.push_back(*al);
    }
    job.master_addr = j.value("master_addr", "");
    job.master_port = j.value("master_port", 0);
    job.endpoint = j.value("endpoint", "");
    return job;
  } catch (const json::exception& e) {
    return Error{std::string("job: ") + e.what()};
  }
}

}  // namespace tessel::api
