#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/json_int.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace tessel::api {

using nlohmann::json;

// Protocol messages come from our own agents and scheduler; parsing is still
// total (never throws past this file) because a peer may be another version.
// Every error is invalid_argument, with the field when one field is at fault.
template <class F>
static auto guarded(const char* what, F&& f) {
  return read_json(Error::invalid(what), std::forward<F>(f));
}

// The answer's `epoch` (absent: 0, a scheduler without replicas); never negative.
static int64_t epoch_from_json(const json& j, JsonInts& ints) {
  const auto epoch = ints.at_or<int64_t>(j, "epoch", 0);
  if (epoch < 0) ints.fail("epoch: must not be negative");
  return epoch;
}

// An answer's `inventory_tag` (absent: 0, a scheduler that takes no readings).
static int64_t inventory_tag_from_json(const json& j, JsonInts& ints) {
  const auto tag = ints.at_or<int64_t>(j, "inventory_tag", 0);
  if (tag < 0) ints.fail("inventory_tag: must not be negative");
  return tag;
}

static void put_inventory_tag(json& j, int64_t tag) {
  if (tag != 0) j["inventory_tag"] = tag;
}

static void put_epoch(json& j, int64_t epoch) {
  if (epoch > 0) j["epoch"] = epoch;
}

std::string assignment_id(const std::string& job_id, int attempt, int rank) {
  return job_id + "." + std::to_string(attempt) + "." + std::to_string(rank);
}

json to_json(const Assignment& a) {
  json j = {{"id", a.id},
            {"job_id", a.job_id},
            {"attempt", a.attempt},
            {"node_rank", a.node_rank},
            {"nnodes", a.nnodes},
            {"module_ids", a.module_ids},
            {"indices", a.indices},
            {"master_addr", a.master_addr},
            {"master_port", a.master_port},
            {"spec", to_json(a.spec)}};
  if (a.preemptions > 0) j["preemptions"] = a.preemptions;
  if (a.cpus > 0) j["cpus"] = a.cpus;
  if (a.memory_mib > 0) j["memory_mib"] = a.memory_mib;
  if (!a.signals.empty()) j["signals"] = to_json(a.signals);
  return j;
}

Result<Assignment> assignment_from_json(const json& j) {
  return guarded("assignment", [&](JsonInts& ints) -> Result<Assignment> {
    Assignment a;
    a.id = j.at("id").get<std::string>();
    a.job_id = j.at("job_id").get<std::string>();
    a.attempt = ints.at<int>(j, "attempt");
    a.node_rank = ints.at<int>(j, "node_rank");
    a.nnodes = ints.at<int>(j, "nnodes");
    a.module_ids = ints.list_at<int>(j, "module_ids");
    a.indices = ints.list_at<int>(j, "indices");
    a.master_addr = j.at("master_addr").get<std::string>();
    a.master_port = ints.at<int>(j, "master_port");
    a.preemptions = ints.at_or<int>(j, "preemptions", 0);
    a.cpus = ints.at_or<int>(j, "cpus", 0);
    if (a.cpus < 0 || a.cpus > kMaxTaskCpus)
      return Error::invalid("assignment.cpus: must be 0-" + std::to_string(kMaxTaskCpus), "cpus");
    a.memory_mib = ints.at_or<int64_t>(j, "memory_mib", 0);
    if (a.memory_mib < 0 || a.memory_mib > kMaxTaskMemoryMib)
      return Error::invalid("assignment.memory_mib: must be 0-" + std::to_string(kMaxTaskMemoryMib), "memory_mib");
    auto sp = parse_job_spec(j.at("spec"));
    if (!sp) return Error::invalid("assignment.spec: " + sp.error().message, "spec." + sp.error().field);
    a.spec = std::move(*sp);
    if (a.module_ids.size() != a.indices.size())
      return Error::invalid("assignment: module_ids and indices differ in length", "indices");
    if (j.contains("signals")) {
      auto sigs = signals_from_json(j["signals"]);
      if (!sigs) return Error::invalid("assignment." + sigs.error().message, "signals");
      a.signals = std::move(*sigs);
    }
    return a;
  });
}

std::string to_string(TaskState s) {
  switch (s) {
    case TaskState::running: return "running";
    case TaskState::exited: return "exited";
    case TaskState::failed_to_start: return "failed_to_start";
  }
  return "unknown";
}

json to_json(const TaskReport& r) {
  json j = {{"assignment_id", r.assignment_id}, {"state", to_string(r.state)}};
  if (r.exit_code) j["exit_code"] = *r.exit_code;
  if (r.signal) j["signal"] = *r.signal;
  if (!r.message.empty()) j["message"] = r.message;
  if (r.port) j["port"] = r.port;
  if (r.cpu_seconds) j["cpu_seconds"] = *r.cpu_seconds;
  if (r.max_rss_mib) j["max_rss_mib"] = *r.max_rss_mib;
  if (!r.logs_capped.empty()) j["logs_capped"] = r.logs_capped;
  if (!r.phase.empty()) j["phase"] = r.phase;
  return j;
}

// A phase's name: 1 to kMaxTaskPhaseBytes of [a-z_].
static bool valid_phase(const std::string& p) {
  if (p.empty() || p.size() > kMaxTaskPhaseBytes) return false;
  return std::all_of(p.begin(), p.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

Result<TaskReport> task_report_from_json(const json& j) {
  return guarded("task report", [&](JsonInts& ints) -> Result<TaskReport> {
    TaskReport r;
    r.assignment_id = j.at("assignment_id").get<std::string>();
    std::string st = j.at("state").get<std::string>();
    if (st == "running")
      r.state = TaskState::running;
    else if (st == "exited")
      r.state = TaskState::exited;
    else if (st == "failed_to_start")
      r.state = TaskState::failed_to_start;
    else
      return Error::invalid("task report: unknown state '" + st + "'", "state");
    if (j.contains("exit_code") && !j["exit_code"].is_null()) r.exit_code = ints.at<int>(j, "exit_code");
    if (j.contains("signal") && !j["signal"].is_null()) r.signal = ints.at<int>(j, "signal");
    r.message = j.value("message", "");
    r.port = ints.at_or<int>(j, "port", 0);
    if (j.contains("cpu_seconds") && !j["cpu_seconds"].is_null()) {
      const json& c = j["cpu_seconds"];
      if (!c.is_number() || !(c.get<double>() >= 0 && c.get<double>() < 1e15))
        return Error::invalid("task report: cpu_seconds: must be a number 0-1e15", "cpu_seconds");
      r.cpu_seconds = c.get<double>();
    }
    if (j.contains("max_rss_mib") && !j["max_rss_mib"].is_null()) {
      r.max_rss_mib = ints.at<int64_t>(j, "max_rss_mib");
      if (*r.max_rss_mib < 0) return Error::invalid("task report: max_rss_mib: must not be negative", "max_rss_mib");
    }
    if (j.contains("logs_capped") && !j["logs_capped"].is_null()) {
      const json& l = j["logs_capped"];
      if (!l.is_array() || l.size() > static_cast<size_t>(kMaxLocalRanks))
        return Error::invalid("task report: logs_capped: must be an array of local ranks", "logs_capped");
      for (const auto& rank : l) {
        if (!rank.is_number_integer() || rank.get<int64_t>() < 0 || rank.get<int64_t>() >= kMaxLocalRanks)
          return Error::invalid("task report: logs_capped: local ranks are 0-4095", "logs_capped");
        r.logs_capped.push_back(rank.get<int>());
      }
    }
    if (j.contains("phase") && !j["phase"].is_null()) {
      const json& p = j["phase"];
      if (!p.is_string() || !valid_phase(p.get<std::string>()))
        return Error::invalid("task report: phase: must be 1-" + std::to_string(kMaxTaskPhaseBytes) + " of a-z and _",
                              "phase");
      r.phase = p.get<std::string>();
    }
    return r;
  });
}

static Result<std::string> degraded_from_json(const json& j) {
  std::string d = j.value("degraded", "");
  if (d.size() > kMaxDegradedBytes)
    return Error::invalid("degraded: longer than " + std::to_string(kMaxDegradedBytes) + " bytes", "degraded");
  return d;
}

static void put_refusals(json& j, const EpochRefusals& r) {
  if (r.total == 0) return;
  j["epoch_refusals"] = {{"total", r.total}, {"last_epoch", r.last_epoch}, {"highest", r.highest}};
}

static EpochRefusals refusals_from_json(const json& j, JsonInts& ints) {
  EpochRefusals r;
  if (!j.contains("epoch_refusals")) return r;
  const json& e = j.at("epoch_refusals");
  if (!e.is_object()) {
    ints.fail("epoch_refusals: must be an object");
    return r;
  }
  r.total = ints.at_or<uint64_t>(e, "total", 0);
  r.last_epoch = ints.at_or<int64_t>(e, "last_epoch", 0);
  r.highest = ints.at_or<int64_t>(e, "highest", 0);
  if (r.last_epoch < 0 || r.highest < 0) ints.fail("epoch_refusals: epochs must not be negative");
  return r;
}

static json reports_to_json(const std::vector<TaskReport>& tasks) {
  json a = json::array();
  for (const auto& t : tasks) a.push_back(to_json(t));
  return a;
}

static Result<std::vector<TaskReport>> reports_from_json(const json& j) {
  std::vector<TaskReport> out;
  if (!j.is_array()) return Error::invalid("tasks: must be an array", "tasks");
  for (const auto& t : j) {
    auto r = task_report_from_json(t);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

json to_json(const RegisterRequest& r) {
  json out = {{"node", r.node},
              {"address", r.address},
              {"agent_port", r.agent_port},
              {"inventory", to_json(r.inventory)},
              {"tasks", reports_to_json(r.tasks)}};
  if (!r.degraded.empty()) out["degraded"] = r.degraded;
  put_refusals(out, r.epoch_refusals);
  return out;
}

Result<RegisterRequest> register_request_from_json(const json& j) {
  return guarded("register", [&](JsonInts& ints) -> Result<RegisterRequest> {
    RegisterRequest r;
    r.node = j.at("node").get<std::string>();
    r.address = j.at("address").get<std::string>();
    r.agent_port = ints.at_or<int>(j, "agent_port", 0);
    auto inv = inventory_from_json(j.at("inventory"));
    if (!inv) return inv.error();
    r.inventory = std::move(*inv);
    auto tasks = reports_from_json(j.value("tasks", json::array()));
    if (!tasks) return tasks.error();
    r.tasks = std::move(*tasks);
    auto degraded = degraded_from_json(j);
    if (!degraded) return degraded.error();
    r.degraded = std::move(*degraded);
    r.epoch_refusals = refusals_from_json(j, ints);
    return r;
  });
}

json to_json(const RegisterResponse& r) {
  json j = {{"heartbeat_interval_s", r.heartbeat_interval_s}};
  if (!r.scheduler_key.empty()) j["scheduler_key"] = r.scheduler_key;
  put_epoch(j, r.epoch);
  put_inventory_tag(j, r.inventory_tag);
  return j;
}

Result<RegisterResponse> register_response_from_json(const json& j) {
  return guarded("register response", [&](JsonInts& ints) -> Result<RegisterResponse> {
    RegisterResponse r;
    r.heartbeat_interval_s = ints.at<int>(j, "heartbeat_interval_s");
    r.scheduler_key = j.value("scheduler_key", "");
    if (r.scheduler_key.size() > 256) return Error::invalid("scheduler_key: longer than 256", "scheduler_key");
    r.epoch = epoch_from_json(j, ints);
    r.inventory_tag = inventory_tag_from_json(j, ints);
    return r;
  });
}

json to_json(const HeartbeatRequest& r) {
  json out = {{"node", r.node}};
  if (r.readings) {
    json devices = json::array();
    for (const DeviceReading& d : r.readings->devices) devices.push_back(to_json(d));
    out["readings"] = std::move(devices);
    out["inventory_tag"] = r.readings->inventory_tag;
  } else {
    out["inventory"] = to_json(r.inventory);
  }
  if (r.tasks) out["tasks"] = reports_to_json(*r.tasks);
  if (!r.degraded.empty()) out["degraded"] = r.degraded;
  put_refusals(out, r.epoch_refusals);
  return out;
}

Result<HeartbeatRequest> heartbeat_request_from_json(const json& j) {
  return guarded("heartbeat", [&](JsonInts& ints) -> Result<HeartbeatRequest> {
    HeartbeatRequest r;
    r.node = j.at("node").get<std::string>();
    if (!j.contains("readings")) {
      if (!j.contains("inventory")) return Error::invalid("inventory: required (or readings)", "inventory");
      if (j.contains("inventory_tag"))
        return Error::invalid("inventory_tag: goes with readings, not with an inventory", "inventory_tag");
      auto inv = inventory_from_json(j["inventory"]);
      if (!inv) return inv.error();
      r.inventory = std::move(*inv);
    } else {
      if (j.contains("inventory")) return Error::invalid("readings: not with an inventory too", "readings");
      auto readings = readings_from_json(j["readings"]);
      if (!readings) return readings.error();
      if (!j.contains("inventory_tag")) return Error::invalid("inventory_tag: required with readings", "inventory_tag");
      const json& tag = j["inventory_tag"];
      if (!tag.is_number_integer() || tag.get<int64_t>() <= 0)
        return Error::invalid("inventory_tag: must be a positive integer", "inventory_tag");
      r.readings = HeartbeatReadings{tag.get<int64_t>(), std::move(*readings)};
    }
    if (j.contains("tasks")) {
      auto tasks = reports_from_json(j["tasks"]);
      if (!tasks) return tasks.error();
      r.tasks = std::move(*tasks);
    }
    auto degraded = degraded_from_json(j);
    if (!degraded) return degraded.error();
    r.degraded = std::move(*degraded);
    r.epoch_refusals = refusals_from_json(j, ints);
    return r;
  });
}

json to_json(const HeartbeatResponse& r) {
  json j = {{"acknowledged", r.acknowledged}};
  put_epoch(j, r.epoch);
  put_inventory_tag(j, r.inventory_tag);
  return j;
}

Result<HeartbeatResponse> heartbeat_response_from_json(const json& j) {
  return guarded("heartbeat response", [&](JsonInts& ints) -> Result<HeartbeatResponse> {
    HeartbeatResponse r;
    r.acknowledged = j.value("acknowledged", std::vector<std::string>{});
    r.epoch = epoch_from_json(j, ints);
    r.inventory_tag = inventory_tag_from_json(j, ints);
    return r;
  });
}

json to_json(const ReportRequest& r) { return {{"node", r.node}, {"tasks", reports_to_json(r.tasks)}}; }

Result<ReportRequest> report_request_from_json(const json& j) {
  return guarded("report", [&](JsonInts& /*ints*/) -> Result<ReportRequest> {
    ReportRequest r;
    r.node = j.at("node").get<std::string>();
    auto tasks = reports_from_json(j.at("tasks"));
    if (!tasks) return tasks.error();
    r.tasks = std::move(*tasks);
    return r;
  });
}

json to_json(const ReportResponse& r) {
  json j = {{"acknowledged", r.acknowledged}};
  put_epoch(j, r.epoch);
  return j;
}

Result<ReportResponse> report_response_from_json(const json& j) {
  return guarded("report response", [&](JsonInts& ints) -> Result<ReportResponse> {
    ReportResponse r;
    r.acknowledged = j.value("acknowledged", std::vector<std::string>{});
    r.epoch = epoch_from_json(j, ints);
    return r;
  });
}

json to_json(const DesiredState& d) {
  json a = json::array();
  for (const auto& x : d.assignments) a.push_back(to_json(x));
  json out = {{"version", d.version}, {"assignments", a}};
  if (d.poll_after_ms > 0) out["poll_after_ms"] = d.poll_after_ms;
  put_epoch(out, d.epoch);
  return out;
}

Result<DesiredState> desired_state_from_json(const json& j) {
  return guarded("desired state", [&](JsonInts& ints) -> Result<DesiredState> {
    DesiredState d;
    d.version = ints.at<int64_t>(j, "version");
    for (const auto& x : j.at("assignments")) {
      auto a = assignment_from_json(x);
      if (!a) return a.error();
      d.assignments.push_back(std::move(*a));
    }
    d.poll_after_ms = ints.at_or<int>(j, "poll_after_ms", 0);
    if (d.poll_after_ms < 0 || d.poll_after_ms > kMaxPollAfterMs)
      return Error::invalid("desired state: poll_after_ms must be 0.." + std::to_string(kMaxPollAfterMs),
                            "poll_after_ms");
    d.epoch = epoch_from_json(j, ints);
    return d;
  });
}

}  // namespace tessel::api
