#include "tessel/api/job.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "job_fields.hpp"
#include "tessel/api/topology.hpp"
#include "tessel/api/json_int.hpp"

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

// A dependency list: an array of distinct job ids, or ids of array elements.
void read_job_ids(FieldReader& r, const json& j, const std::string& key, std::vector<std::string>& out) {
  if (!r.has(key)) return;
  const auto& ids = j[key];
  if (!ids.is_array()) return r.fail(key, "must be an array of job ids");
  if (ids.size() > kMaxDependencies) return r.fail(key, "more than " + std::to_string(kMaxDependencies) + " jobs");
  for (const auto& v : ids) {
    if (!v.is_string()) return r.fail(key, "must be an array of job ids");
    const auto& id = v.get_ref<const std::string&>();
    if (!is_job_id(id) && !split_element_id(id))
      return r.fail(key, "'" + id.substr(0, 32) + "' is not a job id like j-00000042 or j-00000042_7");
    if (std::find(out.begin(), out.end(), id) != out.end()) return r.fail(key, "lists " + id + " twice");
    out.push_back(id);
  }
}
}  // namespace

bool is_job_id(std::string_view s) {
  if (s.size() < 10 || s.size() > 20 || s.substr(0, 2) != "j-") return false;
  return std::all_of(s.begin() + 2, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

size_t spec_payload_bytes(const JobSpec& s) {
  size_t n = s.name.size() + s.workdir.size();
  for (const auto& a : s.command) n += a.size() + 3;  // Quotes and a comma.
  for (const auto& [k, v] : s.env) n += k.size() + v.size() + 6;
  for (const auto& [k, v] : s.constraints.node_selector) n += k.size() + v.size() + 6;
  for (const auto& name : s.constraints.nodelist) n += name.size() + 3;
  for (const auto& name : s.constraints.exclude) n += name.size() + 3;
  n += s.constraints.reservation.size();
  n += s.constraints.topology.required.size() + s.constraints.topology.preferred.size();
  return n;
}

bool is_project_name(std::string_view s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (s.empty() || s.size() > 64 || !alnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

bool is_reserved_env(const std::string& name) {
  static const std::array<const char*, 23> reserved = {"HABANA_VISIBLE_MODULES",
                                                       "HABANA_VISIBLE_DEVICES",
                                                       "CUDA_VISIBLE_DEVICES",
                                                       "ROCR_VISIBLE_DEVICES",
                                                       "HIP_VISIBLE_DEVICES",
                                                       "ASCEND_RT_VISIBLE_DEVICES",
                                                       "ZE_AFFINITY_MASK",
                                                       "ZE_FLAT_DEVICE_HIERARCHY",
                                                       "NEURON_RT_VISIBLE_CORES",
                                                       "MUSA_VISIBLE_DEVICES",
                                                       "MLU_VISIBLE_DEVICES",
                                                       "TPU_VISIBLE_CHIPS",
                                                       "TPU_CHIPS_PER_PROCESS_BOUNDS",
                                                       "TPU_PROCESS_BOUNDS",
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

namespace {
// JobSpec.command: 1 to kMaxArgs strings, each without NUL, kMaxCommandBytes in all.
void read_command(FieldReader& r, const json& j, JobSpec& s) {
  if (!r.has("command")) {
    r.fail("command", "is required");
  } else if (!j["command"].is_array()) {
    r.fail("command", "must be an array of strings");
  } else if (j["command"].empty()) {
    r.fail("command", "must not be empty");
  } else if (j["command"].size() > kMaxArgs) {
    r.fail("command", "more than " + std::to_string(kMaxArgs) + " arguments");
  } else {
    size_t total = 0;
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
      total += str.size() + 1;
      if (total > kMaxCommandBytes) {
        r.fail("command", "more than " + std::to_string(kMaxCommandBytes) + " bytes in all");
        break;
      }
      s.command.push_back(str);
    }
    if (!s.command.empty() && s.command[0].empty()) r.fail("command", "program name must not be empty");
  }
}

// JobSpec.env: valid names, none the scheduler sets, string values without NUL,
// kMaxEnvBytes in all as exec() counts them.
void read_env(FieldReader& r, const json& j, JobSpec& s) {
  if (r.has("env")) {
    const auto& e = j["env"];
    if (!e.is_object()) {
      r.fail("env", "must be an object of strings");
    } else if (e.size() > kMaxEnv) {
      r.fail("env", "more than " + std::to_string(kMaxEnv) + " variables");
    } else {
      size_t total = 0;
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
        total += k.size() + str.size() + 2;  // NAME=value and its NUL, as exec() counts it.
        if (total > kMaxEnvBytes) {
          r.fail("env", "more than " + std::to_string(kMaxEnvBytes) + " bytes in all");
          break;
        }
        s.env[k] = str;
      }
    }
  }
}
}  // namespace

Result<JobSpec> parse_job_spec(const json& j) {
  if (!j.is_object()) return Error::invalid("body must be a JSON object");
  JobSpec s;
  FieldReader r(j, "");
  r.optional_string("name", s.name, 256);
  read_command(r, j, s);
  read_env(r, j, s);
  r.optional_string("workdir", s.workdir, 4096);
  if (!s.workdir.empty() && s.workdir[0] != '/') r.fail("workdir", "must be an absolute path");
  if (r.has("devices")) r.optional_int("devices", s.devices, 0, kMaxDevices);
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
      r.fail("vendor", "must be one of " + supported_vendor_names());
  }
  r.optional_string("model", s.model, 64);
  // Checked against the vendor's groups when the job names one (Gaudi: 1, 2, 4, 8).
  if (r.has("devices"))
    if (std::string why = devices_error(s.devices, s.vendor, s.model); !why.empty()) r.fail("devices", why);
  r.optional_string("driver_version", s.driver_version, 128);
  if (s.driver_version.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-_+") !=
      std::string::npos)
    r.fail("driver_version", "must be letters, digits, '.', '-', '_' or '+' (e.g. \"1.17.0\")");
  read_job_ids(r, j, "after_ok", s.after_ok);
  read_job_ids(r, j, "after_any", s.after_any);
  read_job_ids(r, j, "after_not_ok", s.after_not_ok);
  r.optional_string("project", s.project, 64);
  if (!s.project.empty() && !is_project_name(s.project))
    r.fail("project", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  r.optional_bool("preemptible", s.preemptible);
  r.optional_int("cpus", s.cpus, 0, kMaxTaskCpus);
  std::optional<int64_t> memory_mib;
  r.optional_int("memory_mib", memory_mib, 0, kMaxTaskMemoryMib);
  s.memory_mib = memory_mib.value_or(0);
  read_container_fields(r, j, s);
  read_node_constraints(r, j, s);
  read_warning_signal(r, j, s);
  std::optional<FieldError> array_error;
  if (r.has("array")) {
    ArraySpec a;
    array_error = read_array(j["array"], a);
    s.array = a;
  }
  if (s.task_per_device && s.devices == 0) r.fail("tasks_per_node", "\"device\" needs devices > 0");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  if (array_error) return Error::invalid(array_error->message, array_error->field);
  return s;
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
  if (!s.driver_version.empty()) j["driver_version"] = s.driver_version;
  if (!s.after_ok.empty()) j["after_ok"] = s.after_ok;
  if (!s.after_any.empty()) j["after_any"] = s.after_any;
  if (!s.after_not_ok.empty()) j["after_not_ok"] = s.after_not_ok;
  if (!s.project.empty()) j["project"] = s.project;
  if (s.preemptible) j["preemptible"] = true;
  if (s.cpus > 0) j["cpus"] = s.cpus;
  if (s.memory_mib > 0) j["memory_mib"] = s.memory_mib;
  if (!s.image.empty()) j["image"] = s.image;
  if (s.image_pull_always) j["image_pull"] = "always";
  if (!s.mounts.empty()) {
    json mounts = json::array();
    for (const Mount& m : s.mounts) {
      json mj = {{"source", m.source}, {"target", m.target}};
      if (m.read_only) mj["read_only"] = true;
      mounts.push_back(std::move(mj));
    }
    j["mounts"] = std::move(mounts);
  }
  if (s.shm_size_mib > 0) j["shm_size_mib"] = s.shm_size_mib;
  if (!s.constraints.node_selector.empty()) j["node_selector"] = s.constraints.node_selector;
  if (!s.constraints.nodelist.empty()) j["nodelist"] = s.constraints.nodelist;
  if (!s.constraints.exclude.empty()) j["exclude"] = s.constraints.exclude;
  if (!s.constraints.reservation.empty()) j["reservation"] = s.constraints.reservation;
  if (!s.constraints.topology.required.empty()) j["topology"] = {{"required", s.constraints.topology.required}};
  if (!s.constraints.topology.preferred.empty()) j["topology"] = {{"preferred", s.constraints.topology.preferred}};
  if (s.signal) j["signal"] = to_json(*s.signal);
  if (s.array) {
    j["array"] = {{"count", s.array->count}, {"parallel", s.array->parallel}};
    if (!s.array->indices.empty()) j["array"]["indices"] = s.array->indices;
  }
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
  json j = {{"node", a.node}, {"rank", a.rank}, {"module_ids", a.module_ids}, {"indices", a.indices}};
  if (a.cpus > 0) j["cpus"] = a.cpus;
  if (a.memory_mib > 0) j["memory_mib"] = a.memory_mib;
  return j;
}

Result<Allocation> allocation_from_json(const json& j) {
  return read_json(Error{"allocation"}, [&](JsonInts& ints) -> Result<Allocation> {
    Allocation a;
    a.node = j.at("node").get<std::string>();
    a.rank = ints.at<int>(j, "rank");
    a.module_ids = ints.list_at<int>(j, "module_ids");
    a.indices = ints.list_at<int>(j, "indices");
    a.cpus = ints.at_or<int>(j, "cpus", 0);
    a.memory_mib = ints.at_or<int64_t>(j, "memory_mib", 0);
    if (a.cpus < 0 || a.cpus > kMaxTaskCpus) ints.fail("cpus out of range");
    if (a.memory_mib < 0 || a.memory_mib > kMaxTaskMemoryMib) ints.fail("memory_mib out of range");
    return a;
  });
}

json to_json(const JobEvent& e) {
  json j = {{"at", format_rfc3339(e.at_ms)},
            {"event", e.event},
            {"state", to_string(e.state)},
            {"attempt", e.attempt},
            {"nodes", e.nodes}};
  if (!e.reason.empty()) j["reason"] = e.reason;
  if (e.exit_code) j["exit_code"] = *e.exit_code;
  if (!e.by.empty()) j["by"] = e.by;
  return j;
}

void add_job_event(std::vector<JobEvent>& events, JobEvent e) {
  if (events.size() >= kMaxJobEvents) events.erase(events.begin() + (events.size() > 1 ? 1 : 0));
  events.push_back(std::move(e));
}

namespace {
Result<JobEvent> event_from_json(const json& j, JsonInts& ints) {
  JobEvent e;
  auto at = parse_rfc3339(j.at("at").get<std::string>());
  if (!at) return Error{"job.events.at: not an RFC 3339 time"};
  e.at_ms = *at;
  e.event = j.at("event").get<std::string>();
  auto st = parse_job_state(j.at("state").get<std::string>());
  if (!st) return Error{"job.events.state: unknown state"};
  e.state = *st;
  e.attempt = ints.at_or<int>(j, "attempt", 0);
  e.nodes = j.value("nodes", std::vector<std::string>{});
  e.reason = j.value("reason", "");
  if (j.contains("exit_code") && !j["exit_code"].is_null()) e.exit_code = ints.at<int>(j, "exit_code");
  e.by = j.value("by", "");
  return e;
}
}  // namespace

json to_json(const Job& job) {
  json allocs = json::array();
  for (const auto& a : job.allocations) allocs.push_back(to_json(a));
  json j = {{"id", job.id},
            {"name", job.name},
            {"user", job.user},
            {"state", to_string(job.state)},
            {"spec", to_json(job.spec)},
            {"attempt", job.attempt},
            {"preemptions", job.preemptions},
            {"submitted_at", format_rfc3339(job.submitted_at_ms)},
            {"allocations", allocs}};
  if (!job.reason.empty()) j["reason"] = job.reason;
  if (job.spec_shared) {
    j["spec_from_parent"] = true;
    for (const char* shared : {"command", "env", "workdir"}) j["spec"].erase(shared);
  }
  if (job.started_at_ms) j["started_at"] = format_rfc3339(job.started_at_ms);
  if (job.finished_at_ms) j["finished_at"] = format_rfc3339(job.finished_at_ms);
  if (job.exit_code) j["exit_code"] = *job.exit_code;
  if (job.cpu_seconds) j["cpu_seconds"] = *job.cpu_seconds;
  if (job.max_rss_mib) j["max_rss_mib"] = *job.max_rss_mib;
  if (!job.preempt_claim.empty() && job.state == JobState::pending) {
    json claim = json::array();
    for (const auto& a : job.preempt_claim) claim.push_back(to_json(a));
    j["preempting"] = {{"victims", job.preempt_victims}, {"allocations", claim}};
  }
  if (job.last_preempted_at_ms) {
    j["last_preempted_at"] = format_rfc3339(job.last_preempted_at_ms);
    j["last_preempted_by"] = job.last_preempted_by;
  }
  if (job.requeues > 0) j["requeues"] = job.requeues;
  if (!job.held_by.empty()) j["held_by"] = job.held_by;
  if (!job.signals.empty()) j["signals"] = to_json(job.signals);
  if (!job.master_addr.empty()) {
    j["master_addr"] = job.master_addr;
    j["master_port"] = job.master_port;
  }
  if (!job.endpoint.empty()) j["endpoint"] = job.endpoint;
  if (job.queue_position > 0) j["queue_position"] = job.queue_position;
  if (job.estimated_start_ms) j["estimated_start"] = format_rfc3339(*job.estimated_start_ms);
  if (job.array) {
    json states = json::object();
    for (const auto& [st, n] : job.array->states) states[to_string(st)] = n;
    // The first and last elements by index (their spec has the indices).
    const std::vector<int> indices = job.spec.array ? array_indices(*job.spec.array) : std::vector<int>{0};
    j["array"] = {{"count", job.array->count},
                  {"parallel", job.array->parallel},
                  {"first", array_element_id(job.id, indices.empty() ? 0 : indices.front())},
                  {"last", array_element_id(job.id, indices.empty() ? 0 : indices.back())},
                  {"states", states}};
  } else if (auto e = split_element_id(job.id)) {
    j["array_id"] = e->parent;
    j["array_index"] = e->index;
  }
  if (!job.events.empty()) {
    json events = json::array();
    for (const auto& e : job.events) events.push_back(to_json(e));
    j["events"] = std::move(events);
  }
  return j;
}

void share_parent_spec(Job& element) {
  element.spec.command.clear();
  element.spec.env.clear();
  element.spec.workdir.clear();
  element.spec_shared = true;
}

void take_parent_spec(Job& element, const JobSpec& parent) {
  element.spec.command = parent.command;
  element.spec.env = parent.env;
  element.spec.workdir = parent.workdir;
  element.spec_shared = false;
}

Result<Job> job_from_json(const json& j) {
  return read_json(Error{"job"}, [&](JsonInts& ints) -> Result<Job> {
    Job job;
    job.id = j.at("id").get<std::string>();
    job.name = j.value("name", "");
    job.user = j.value("user", "");
    auto st = parse_job_state(j.at("state").get<std::string>());
    if (!st) return Error{"job.state: unknown state"};
    job.state = *st;
    job.reason = j.value("reason", "");
    const bool shared = j.value("spec_from_parent", false);
    json stand_in;
    if (shared) {  // The parent's command stands in for the check; the element keeps none.
      stand_in = j.at("spec");
      stand_in["command"] = json::array({"-"});
    }
    auto sp = parse_job_spec(shared ? stand_in : j.at("spec"));
    if (!sp) return Error{"job.spec: " + sp.error().message};
    job.spec = std::move(*sp);
    if (shared) share_parent_spec(job);
    job.attempt = ints.at_or<int>(j, "attempt", 0);
    job.preemptions = ints.at_or<int>(j, "preemptions", 0);
    job.requeues = ints.at_or<int>(j, "requeues", 0);
    for (auto [key, out] :
         {std::pair{"submitted_at", &job.submitted_at_ms}, std::pair{"started_at", &job.started_at_ms},
          std::pair{"finished_at", &job.finished_at_ms}, std::pair{"last_preempted_at", &job.last_preempted_at_ms}}) {
      if (!j.contains(key) || j[key].is_null()) continue;
      auto t = parse_rfc3339(j[key].get<std::string>());
      if (!t) return Error{std::string("job.") + key + ": not an RFC 3339 time"};
      *out = *t;
    }
    if (j.contains("exit_code") && !j["exit_code"].is_null()) job.exit_code = ints.at<int>(j, "exit_code");
    if (j.contains("cpu_seconds") && j["cpu_seconds"].is_number()) job.cpu_seconds = j["cpu_seconds"].get<double>();
    if (j.contains("max_rss_mib") && !j["max_rss_mib"].is_null()) job.max_rss_mib = ints.at<int64_t>(j, "max_rss_mib");
    for (const auto& a : j.value("allocations", json::array())) {
      auto al = allocation_from_json(a);
      if (!al) return al.error();
      job.allocations.push_back(*al);
    }
    job.last_preempted_by = j.value("last_preempted_by", "");
    job.held_by = j.value("held_by", "");
    if (j.contains("signals")) {
      auto sigs = signals_from_json(j["signals"]);
      if (!sigs) return sigs.error().wrap("job");
      job.signals = std::move(*sigs);
    }
    if (j.contains("preempting") && j["preempting"].is_object()) {
      const json& p = j["preempting"];
      for (const auto& a : p.value("allocations", json::array())) {
        auto al = allocation_from_json(a);
        if (!al) return al.error().wrap("job.preempting");
        job.preempt_claim.push_back(*al);
      }
      for (const auto& v : p.value("victims", json::array())) job.preempt_victims.push_back(v.get<std::string>());
    }
    job.master_addr = j.value("master_addr", "");
    job.master_port = ints.at_or<int>(j, "master_port", 0);
    job.endpoint = j.value("endpoint", "");
    job.queue_position = ints.at_or<int>(j, "queue_position", 0);
    if (j.contains("estimated_start") && !j["estimated_start"].is_null()) {
      auto t = parse_rfc3339(j["estimated_start"].get<std::string>());
      if (!t) return Error{"job.estimated_start: not an RFC 3339 time"};
      job.estimated_start_ms = *t;
    }
    if (j.contains("array") && j["array"].is_object()) {
      const json& a = j["array"];
      ArrayView view;
      view.count = ints.at<int>(a, "count");
      view.parallel = ints.at<int>(a, "parallel");
      for (const auto& [name, n] : a.value("states", json::object()).items()) {
        auto st = parse_job_state(name);
        if (!st) return Error{"job.array.states: unknown state " + name};
        view.states[*st] = n.get<int>();
      }
      job.array = std::move(view);
    }
    for (const auto& e : j.value("events", json::array())) {
      auto ev = event_from_json(e, ints);
      if (!ev) return ev.error();
      job.events.push_back(std::move(*ev));
    }
    return job;
  });
}

}  // namespace tessel::api
