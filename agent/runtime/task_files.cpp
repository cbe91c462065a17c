#include "tessel/agent/task_files.hpp"

#include <sched.h>

#include <utility>

#include <nlohmann/json.hpp>

#include "tessel/api/json_int.hpp"
#include "tessel/api/signals.hpp"

namespace tessel::agent {

using nlohmann::json;

// The file's text as a JSON object, handed to `f` with the JsonInts it reads integers
// through; every problem is invalid_argument, prefixed with the file's name.
template <class F>
static auto guarded(const char* what, const std::string& text, F&& f)
    -> decltype(f(json(), std::declval<api::JsonInts&>())) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error::invalid(std::string(what) + ": not valid JSON");
  if (!j.is_object()) return Error::invalid(std::string(what) + ": not a JSON object");
  return api::read_json(Error::invalid(what), [&](api::JsonInts& ints) { return f(j, ints); });
}

std::string serialize(const LaunchPlan& p) {
  json ranks = json::array();
  for (const auto& r : p.ranks) {
    json rank = {{"argv", r.argv}, {"env", r.env}, {"log_path", r.log_path}, {"port", r.port}};
    if (!r.cpus.empty()) rank["cpus"] = r.cpus;
    ranks.push_back(std::move(rank));
  }
  json j = {{"assignment_id", p.assignment_id},    {"workdir", p.workdir},           {"ranks", ranks},
            {"time_limit_s", p.time_limit_s},      {"kill_grace_s", p.kill_grace_s}, {"user", p.user},
            {"workdir_as_user", p.workdir_as_user}};
  if (p.uid) j["uid"] = *p.uid;
  if (p.gid) j["gid"] = *p.gid;
  if (p.cgroup) j["cgroup"] = to_json(*p.cgroup);
  if (p.log_cap_bytes > 0) j["log_cap_bytes"] = p.log_cap_bytes;
  if (p.warn_signal > 0) {
    j["warn_signal"] = p.warn_signal;
    j["warn_before_s"] = p.warn_before_s;
  }
  if (p.container) {
    const ContainerPlan& c = *p.container;
    j["container"] = {{"podman", c.podman},           {"image", c.image},
                      {"pull_always", c.pull_always}, {"pull_timeout_s", c.pull_timeout_s},
                      {"authfile", c.authfile},       {"names", c.names}};
  }
  return j.dump();
}

Result<LaunchPlan> parse_launch_plan(const std::string& text) {
  return guarded("launch.json", text, [](const json& j, api::JsonInts& ints) -> Result<LaunchPlan> {
    LaunchPlan p;
    p.assignment_id = j.at("assignment_id").get<std::string>();
    p.workdir = j.at("workdir").get<std::string>();
    p.time_limit_s = ints.at<int64_t>(j, "time_limit_s");
    p.kill_grace_s = ints.at<int64_t>(j, "kill_grace_s");
    p.user = j.value("user", "");
    p.workdir_as_user = j.value("workdir_as_user", true);
    p.log_cap_bytes = ints.at_or<int64_t>(j, "log_cap_bytes", 0);
    if (p.log_cap_bytes < 0) return Error::invalid("launch.json: log_cap_bytes: must not be negative", "log_cap_bytes");
    p.warn_signal = ints.at_or<int>(j, "warn_signal", 0);
    p.warn_before_s = ints.at_or<int64_t>(j, "warn_before_s", 0);
    if (p.warn_signal != 0 && (!api::is_job_signal(p.warn_signal) || p.warn_before_s < 0))
      return Error::invalid("launch.json: warn_signal: not a job's signal", "warn_signal");
    if (j.contains("uid")) p.uid = ints.at<int>(j, "uid");
    if (j.contains("gid")) p.gid = ints.at<int>(j, "gid");
    if (j.contains("cgroup")) {
      auto cg = task_cgroup_from_json(j["cgroup"]);
      if (!cg) return cg.error().wrap("launch.json");
      p.cgroup = std::move(*cg);
    }
    if (j.contains("container")) {
      const json& cj = j["container"];
      ContainerPlan c;
      c.podman = cj.at("podman").get<std::vector<std::string>>();
      c.image = cj.at("image").get<std::string>();
      c.pull_always = cj.value("pull_always", false);
      c.pull_timeout_s = ints.at_or<int64_t>(cj, "pull_timeout_s", 600);
      c.authfile = cj.value("authfile", "");
      c.names = cj.at("names").get<std::vector<std::string>>();
      if (c.podman.empty() || c.image.empty() || c.pull_timeout_s <= 0)
        return Error::invalid("launch.json: container: podman, image and pull_timeout_s are required", "container");
      p.container = std::move(c);
    }
    for (const auto& r : j.at("ranks")) {
      RankLaunch rl;
      rl.argv = r.at("argv").get<std::vector<std::string>>();
      rl.env = r.at("env").get<std::map<std::string, std::string>>();
      rl.log_path = r.at("log_path").get<std::string>();
      rl.port = ints.at_or<int>(r, "port", 0);
      if (r.contains("cpus")) {
        rl.cpus = ints.list_at<int>(r, "cpus");
        for (int c : rl.cpus)
          if (c < 0 || c >= CPU_SETSIZE)
            return Error::invalid("launch.json: ranks[].cpus: out of range", "ranks[].cpus");
      }
      if (rl.argv.empty()) return Error::invalid("launch.json: ranks[].argv: must not be empty", "ranks[].argv");
      p.ranks.push_back(std::move(rl));
    }
    if (p.ranks.empty()) return Error::invalid("launch.json: ranks: must not be empty", "ranks");
    if (p.time_limit_s < 0) return Error::invalid("launch.json: time_limit_s: must not be negative", "time_limit_s");
    if (p.kill_grace_s < 0) return Error::invalid("launch.json: kill_grace_s: must not be negative", "kill_grace_s");
    return p;
  });
}

std::string serialize(const SupervisorRecord& r) { return json{{"pid", r.pid}, {"start_time", r.start_time}}.dump(); }

Result<SupervisorRecord> parse_supervisor_record(const std::string& text) {
  return guarded("supervisor.json", text, [](const json& j, api::JsonInts& ints) -> Result<SupervisorRecord> {
    SupervisorRecord r;
    r.pid = ints.at<int>(j, "pid");
    r.start_time = ints.at<uint64_t>(j, "start_time");
    if (r.pid <= 1) return Error::invalid("supervisor.json: pid: must be > 1", "pid");
    return r;
  });
}

std::string serialize(const TaskResult& r) {
  json j = {{"state", api::to_string(r.state)}, {"message", r.message}};
  if (r.exit_code) j["exit_code"] = *r.exit_code;
  if (r.signal) j["signal"] = *r.signal;
  if (r.cpu_seconds) j["cpu_seconds"] = *r.cpu_seconds;
  if (r.max_rss_mib) j["max_rss_mib"] = *r.max_rss_mib;
  if (!r.logs_capped.empty()) j["logs_capped"] = r.logs_capped;
  return j.dump();
}

Result<TaskResult> parse_task_result(const std::string& text) {
  return guarded("result.json", text, [](const json& j, api::JsonInts& ints) -> Result<TaskResult> {
    TaskResult r;
    std::string st = j.at("state").get<std::string>();
    if (st == "exited")
      r.state = api::TaskState::exited;
    else if (st == "failed_to_start")
      r.state = api::TaskState::failed_to_start;
    else
      return Error::invalid("result.json: state: must be exited or failed_to_start, got '" + st + "'", "state");
    if (j.contains("exit_code")) r.exit_code = ints.at<int>(j, "exit_code");
    if (j.contains("signal")) r.signal = ints.at<int>(j, "signal");
    r.message = j.value("message", "");
    if (j.contains("cpu_seconds")) {
      // Within what a task report may carry (api::task_report_from_json).
      if (!j["cpu_seconds"].is_number() ||
          !(j["cpu_seconds"].get<double>() >= 0 && j["cpu_seconds"].get<double>() < 1e15))
        return Error::invalid("result.json: cpu_seconds: must be a number 0-1e15", "cpu_seconds");
      r.cpu_seconds = j["cpu_seconds"].get<double>();
    }
    if (j.contains("max_rss_mib")) {
      r.max_rss_mib = ints.at<int64_t>(j, "max_rss_mib");
      if (*r.max_rss_mib < 0) return Error::invalid("result.json: max_rss_mib: must not be negative", "max_rss_mib");
    }
    if (j.contains("logs_capped")) r.logs_capped = j["logs_capped"].get<std::vector<int>>();
    return r;
  });
}

std::string serialize(const api::Assignment& a) { return api::to_json(a).dump(); }

Result<api::Assignment> parse_assignment_file(const std::string& text) {
  return guarded("assignment.json", text,
                 [](const json& j, api::JsonInts& /*ints*/) { return api::assignment_from_json(j); });
}

}  // namespace tessel::agent
