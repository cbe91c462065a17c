// ClusterState: the scheduler side of the agent protocol
// (api/tessel/api/agent_protocol.hpp): register, heartbeat, task reports and
// the desired-state long poll.
#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "tessel/base/log_safe.hpp"
#include "tessel/base/random.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
// True when two inventories differ in more than telemetry (worth a DB write).
bool same_shape(const api::NodeInventory& a, const api::NodeInventory& b) {
  if (a.vendor != b.vendor || a.driver_version != b.driver_version || a.ports_error != b.ports_error ||
      a.devices.size() != b.devices.size() || a.labels != b.labels)
    return false;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const auto &x = a.devices[i], &y = b.devices[i];
    if (x.index != y.index || x.module_id != y.module_id || x.model != y.model || x.healthy != y.healthy ||
        x.uuid != y.uuid || x.firmware_version != y.firmware_version || x.ports_total != y.ports_total ||
        x.ports_up != y.ports_up || x.ports_down != y.ports_down || x.cores != y.cores)
      return false;
  }
  return true;
}

// The agent's address as the scheduler will dial it: a host name, IPv4 or IPv6
// (without brackets) address; never a URL, spaces or control characters.
Status check_address(const std::string& address, int port) {
  if (address.empty() || address.size() > 253 ||
      address.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") !=
          std::string::npos)
    return Error::invalid("address: 1-253 characters of letters, digits, '.', '-', '_', ':'", "address");
  if (port < 0 || port > 65535) return Error::invalid("agent_port: must be 0-65535", "agent_port");
  return ok_status();
}

// A rank its agent stopped at the job's time limit ("time limit of 6s reached"): failed,
// whatever it exited with (it may trap SIGTERM and exit 0), and not retried (Slurm's
// TIMEOUT).
bool timed_out(const api::TaskReport& r) {
  return r.state == api::TaskState::exited && r.message.rfind("time limit of ", 0) == 0;
}

// A rank that failed, or whose result could not be recorded (no exit code, no signal).
bool failed_exit(const api::TaskReport& r) {
  return r.state == api::TaskState::exited && (r.signal || r.exit_code.value_or(1) != 0 || timed_out(r));
}

// Why a failed rank ended its job, and the job's exit code.
std::pair<std::string, std::optional<int>> failure_of(const api::TaskReport& r) {
  // The agent saw the kernel kill it at its memory limit (its cgroup's OOM events).
  if (r.message.rfind("out of memory: ", 0) == 0 || timed_out(r)) {
    const int code = r.exit_code.value_or(0) != 0 ? *r.exit_code : (r.signal ? 128 + *r.signal : 1);
    return {r.message, code};
  }
  if (r.signal) {
    const int code = r.exit_code.value_or(0) != 0 ? *r.exit_code : 128 + *r.signal;
    return {"rank killed by signal " + std::to_string(*r.signal), code};
  }
  if (r.exit_code) return {"rank exited with code " + std::to_string(*r.exit_code), *r.exit_code};
  return {r.message.empty() ? "rank ended without a result" : r.message, std::nullopt};
}

bool pulling(const api::TaskReport& r) {
  return r.state == api::TaskState::running && r.phase == api::kTaskPhasePullingImage;
}

// "pulling image REF on n1, n3": the nodes whose task of the job's attempt is pulling
// its image, in rank order; empty when none is.
std::string pulling_reason(const api::Job& j, const std::map<std::string, api::TaskReport>& reports) {
  std::vector<std::string> nodes;
  for (const auto& a : j.allocations) {
    auto r = reports.find(api::assignment_id(j.id, j.attempt, a.rank));
    if (r != reports.end() && pulling(r->second) && std::find(nodes.begin(), nodes.end(), a.node) == nodes.end())
      nodes.push_back(a.node);
  }
  if (nodes.empty()) return "";
  std::string out = ClusterState::kPullingImageReason + j.spec.image + " on ";
  for (size_t i = 0; i < nodes.size(); ++i) out += (i ? ", " : "") + nodes[i];
  return out;
}

void log_degraded(const std::string& node, const std::string& was, const std::string& now) {
  if (was == now) return;
  if (now.empty())
    spdlog::info("node {} is no longer degraded", node);
  else
    spdlog::warn("node {} degraded: {}; placing nothing there", node, now);
}

// Once per report of new refusals (the agent's count grew, or restarted from 0).
void log_refusals(const std::string& node, const api::EpochRefusals& was, const api::EpochRefusals& now) {
  if (now.total == 0 || now == was) return;
  spdlog::warn(
      "node {}: its agent refused {} answer(s) of an old leader epoch so far (the latest of epoch {}, when it had "
      "seen epoch {}): an old leader is still answering agents",
      node, now.total, now.last_epoch, now.highest);
}
}  // namespace

Result<api::RegisterResponse> ClusterState::register_node(const api::RegisterRequest& req, const std::string& token) {
  if (req.node.empty() || req.node.size() > 253 ||
      req.node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") !=
          std::string::npos)
    return Error::invalid("node: 1-253 characters of letters, digits, '.', '-', '_'", "node");
  if (auto s = check_address(req.address, req.agent_port); !s) return s.error();
  MutexLock lk(mu_);
  if (nodes_.registering(req.node))
    return Error::unavailable("node " + req.node + ": another registration of it is being saved; retry");
  NodeEntry n;
  auto it = nodes_.find(req.node);
  if (it != nodes_.end()) n = it->second;
  const bool was_down = it != nodes_.end() && n.down;
  n.rec.name = req.node;
  n.rec.address = req.address;
  n.rec.agent_port = req.agent_port;
  take_inventory_locked(n, req.inventory);
  n.rec.last_heartbeat_ms = clock_.now_ms();
  n.down = false;
  n.degraded = req.degraded;
  n.epoch_refusals = req.epoch_refusals;
  n.token = token;
  auto key = random_hex(32);
  if (!key) return key.error().wrap("the scheduler's key for node " + req.node);
  n.rec.scheduler_key = *key;
  Txn txn;
  txn.batch.nodes.push_back(n.rec);
  const bool is_new = it == nodes_.end();
  txn.apply.push_back([this, n, was_down]() REQUIRES(mu_) {
    const bool is_new = !nodes_.contains(n.rec.name);
    NodeEntry& e = nodes_.upsert(n.rec.name);
    const int64_t version = is_new ? versions_of_nodes_.next() : e.version;
    log_degraded(n.rec.name, e.degraded, n.degraded);
    log_refusals(n.rec.name, e.epoch_refusals, n.epoch_refusals);
    e = n;
    e.version = version;
    alloc_.upsert_node(node_spec_locked(e));
    note_version_skew_locked(n.rec.name);
    spdlog::info("node {} registered ({}{} cards, {}:{})", n.rec.name,
                 is_new     ? "new, "
                 : was_down ? "back up, "
                            : "",
                 n.rec.inventory.devices.size(), log_safe(n.rec.address), n.rec.agent_port);
    mark_dirty_locked();
  });
  // A new node without tasks or fences (a fleet coming up): nothing else refers to it
  // until it is applied, so its record commits without holding mu_, and thousands of
  // registrations share group commits instead of taking turns.
  const bool fenced = nodes_.any_fence_on(req.node);
  if (is_new && req.tasks.empty() && !fenced) {
    nodes_.begin_registration(req.node);
    const bool ok = commit_queued(txn, "register");
    nodes_.end_registration(req.node);
    if (!ok) return storage_unavailable("the node registration");
  } else {
    std::vector<std::string> acks;
    process_reports_locked(txn, req.node, req.tasks, acks);
    if (!commit_locked(txn, "register")) return storage_unavailable("the node registration");
  }
  card_history_.record(req.node, req.inventory.devices, clock_.now_ms());
  api::RegisterResponse resp;
  resp.heartbeat_interval_s = static_cast<int>(std::clamp<int64_t>(opts_.heartbeat_timeout_ms / 3000, 1, 5));
  resp.scheduler_key = *key;
  resp.inventory_tag = n.inventory_tag;
  return resp;
}

void ClusterState::take_heartbeat(NodeEntry& e, const api::HeartbeatRequest& req, const std::string& token,
                                  int64_t now_ms) {
  e.rec.last_heartbeat_ms = now_ms;
  e.down = false;
  e.degraded = req.degraded;
  e.epoch_refusals = req.epoch_refusals;
  e.token = token;
}

bool ClusterState::telemetry_only(const NodeEntry& cur, const api::HeartbeatRequest& req) {
  if (req.tasks || cur.down || cur.degraded != req.degraded) return false;
  return req.readings ? req.readings->inventory_tag == cur.inventory_tag : same_shape(cur.rec.inventory, req.inventory);
}

void ClusterState::take_inventory_locked(NodeEntry& e, api::NodeInventory inventory) {
  e.rec.inventory = std::move(inventory);
  e.inventory_tag = versions_of_nodes_.next_inventory_tag();
}

api::HeartbeatResponse ClusterState::take_telemetry_locked(NodeEntry& cur, const api::HeartbeatRequest& req,
                                                           const std::string& token) {
  const int64_t now = clock_.now_ms();
  log_refusals(req.node, cur.epoch_refusals, req.epoch_refusals);
  take_heartbeat(cur, req, token, now);
  card_history_.record(req.node, cur.rec.inventory.devices, now);
  ++metrics_changes_;
  api::HeartbeatResponse resp;
  resp.inventory_tag = cur.inventory_tag;
  return resp;
}

std::optional<api::HeartbeatResponse> ClusterState::heartbeat_in_place(api::HeartbeatRequest& req,
                                                                       const std::string& token) {
  if (!mu_.try_lock()) return std::nullopt;
  MutexLock lk(mu_, std::adopt_lock);
  auto it = nodes_.find(req.node);
  if (it == nodes_.end() || !telemetry_only(it->second, req)) return std::nullopt;
  NodeEntry& cur = it->second;
  if (!req.readings)
    take_inventory_locked(cur, std::move(req.inventory));
  else if (!api::apply_readings(cur.rec.inventory, req.readings->devices).ok())
    return std::nullopt;  // heartbeat() answers the error.
  return take_telemetry_locked(cur, req, token);
}

Result<api::HeartbeatResponse> ClusterState::heartbeat(const api::HeartbeatRequest& req, const std::string& token) {
  MutexLock lk(mu_);
  auto it = nodes_.find(req.node);
  if (it == nodes_.end()) return Error::not_found("node " + req.node + " is not registered");
  NodeEntry& cur = it->second;
  // Readings: the node's inventory as this scheduler holds it, with them applied.
  std::optional<api::NodeInventory> merged;
  if (req.readings) {
    if (req.readings->inventory_tag != cur.inventory_tag)
      return Error{"inventory_tag: this scheduler holds another inventory of node " + req.node +
                       " (it restarted, or took a newer one): send the whole inventory",
                   ErrorCode::conflict, "inventory_tag"};
    merged = cur.rec.inventory;
    if (auto applied = api::apply_readings(*merged, req.readings->devices); !applied) return applied.error();
  }
  const api::NodeInventory& inventory = merged ? *merged : req.inventory;
  // Nearly every heartbeat: nothing to store, nothing the placement sees (the caller of
  // heartbeat_in_place found the lock busy).
  if (telemetry_only(cur, req)) {
    if (merged)
      cur.rec.inventory = std::move(*merged);
    else
      take_inventory_locked(cur, req.inventory);
    return take_telemetry_locked(cur, req, token);
  }
  const int64_t now = clock_.now_ms();
  const bool was_down = cur.down;
  const bool persist = !same_shape(cur.rec.inventory, inventory);
  const bool degraded_changed = cur.degraded != req.degraded;
  NodeEntry n = cur;
  take_heartbeat(n, req, token, now);
  if (merged)
    n.rec.inventory = std::move(*merged);
  else
    take_inventory_locked(n, req.inventory);
  Txn txn;
  if (persist) txn.batch.nodes.push_back(n.rec);
  txn.apply.push_back([this, n, was_down, persist, degraded_changed]() REQUIRES(mu_) {
    NodeEntry& e = nodes_.at(n.rec.name);
    const int64_t version = e.version;
    log_degraded(n.rec.name, e.degraded, n.degraded);
    log_refusals(n.rec.name, e.epoch_refusals, n.epoch_refusals);
    e = n;
    e.version = version;
    if (persist || was_down || degraded_changed) {
      alloc_.upsert_node(node_spec_locked(e));
      if (persist) note_version_skew_locked(n.rec.name);
      mark_dirty_locked();
      ++nodes_changes_;
    }
    ++metrics_changes_;
    if (was_down) spdlog::info("node {} is back up", n.rec.name);
  });
  api::HeartbeatResponse resp;
  resp.inventory_tag = n.inventory_tag;
  // Agents before POST /v1/agent/report sent their reports here.
  if (req.tasks) process_reports_locked(txn, req.node, *req.tasks, resp.acknowledged);
  if (!commit_locked(txn, "heartbeat")) return storage_unavailable("the heartbeat");
  card_history_.record(req.node, n.rec.inventory.devices, clock_.now_ms());
  return resp;
}

Result<api::ReportResponse> ClusterState::report(const api::ReportRequest& req, const std::string& token) {
  MutexLock lk(mu_);
  auto it = nodes_.find(req.node);
  if (it == nodes_.end()) return Error::not_found("node " + req.node + " is not registered");
  if (!it->second.token.empty() && it->second.token != token)
    return Error::forbidden("node " + req.node + " registered with another token");
  Txn txn;
  api::ReportResponse resp;
  process_reports_locked(txn, req.node, req.tasks, resp.acknowledged);
  if (!commit_locked(txn, "task report")) return storage_unavailable("the task report");
  return resp;
}

void ClusterState::process_reports_locked(Txn& txn, const std::string& node, const std::vector<api::TaskReport>& tasks,
                                          std::vector<std::string>& acknowledged) {
  std::map<std::string, const api::TaskReport*> rep;
  for (const auto& t : tasks) rep[t.assignment_id] = &t;
  // Fences on this node end when the report says the processes are gone.
  for (const auto& [id, f] : nodes_.fences()) {
    if (f.allocation.node != node) continue;
    auto r = rep.find(id);
    if (r != rep.end() && r->second->state == api::TaskState::running) continue;
    txn.batch.delete_fences.push_back(id);
    txn.apply.push_back([this, id = id, node]() REQUIRES(mu_) {
      alloc_.release(id);
      nodes_.unfence(id);
      spdlog::info("fence {} on node {} released: tasks gone", id, node);
      mark_dirty_locked();
    });
  }
  // Reports of current attempts drive their jobs.
  std::set<std::string> still_waiting;
  for (int64_t seq : active_.on(node)) {
    JobEntry& e = jobs_.at(seq);
    bool touched = false;
    for (const auto& a : e.job.allocations) {
      if (a.node != node) continue;
      auto aid = api::assignment_id(e.job.id, e.job.attempt, a.rank);
      auto r = rep.find(aid);
      if (r == rep.end()) continue;
      e.reports[aid] = *r->second;  // In memory only: agents repeat reports until acknowledged.
      touched = true;
    }
    if (touched && !evaluate_job_locked(txn, e)) {
      for (const auto& a : e.job.allocations) still_waiting.insert(api::assignment_id(e.job.id, e.job.attempt, a.rank));
    }
  }
  for (const auto& t : tasks)
    if (t.state != api::TaskState::running && !still_waiting.count(t.assignment_id))
      acknowledged.push_back(t.assignment_id);
}

bool ClusterState::evaluate_job_locked(Txn& txn, const JobEntry& e) {
  const api::Job& j = e.job;
  size_t running = 0, ok = 0;
  const api::TaskReport* failed = nullptr;
  const api::TaskReport* not_started = nullptr;
  for (const auto& a : j.allocations) {
    auto r = e.reports.find(api::assignment_id(j.id, j.attempt, a.rank));
    if (r == e.reports.end()) continue;
    const auto& t = r->second;
    if (t.state == api::TaskState::running) ++running;
    if (t.state == api::TaskState::failed_to_start && !not_started) not_started = &t;
    if (failed_exit(t) && !failed) failed = &t;
    if (t.state == api::TaskState::exited && !failed_exit(t)) ++ok;
  }
  if (not_started) {
    stop_job_locked(txn, e, api::JobState::failed, "failed to start: " + not_started->message, std::nullopt, false);
    return true;
  }
  // Said in the reason the job ends with (and so in its events): ranks whose output
  // passed their node's log cap.
  std::string capped;
  const int per_node = j.spec.task_per_device ? std::max(1, j.spec.devices) : 1;
  for (const auto& a : j.allocations) {
    auto r = e.reports.find(api::assignment_id(j.id, j.attempt, a.rank));
    if (r == e.reports.end()) continue;
    for (int local : r->second.logs_capped)
      capped += (capped.empty() ? "" : ", ") + std::to_string(a.rank * per_node + local);
  }
  if (!capped.empty()) capped = "output of rank " + capped + " passed its node's log cap; the rest was dropped";
  if (failed) {
    const auto [why, code] = failure_of(*failed);
    stop_job_locked(txn, e, api::JobState::failed, capped.empty() ? why : why + "; " + capped, code,
                    /*retry=*/!timed_out(*failed));
    return true;
  }
  if (ok == j.allocations.size()) {
    stop_job_locked(txn, e, api::JobState::succeeded, capped, 0, false);
    return true;
  }
  std::string endpoint = j.endpoint;
  for (const auto& a : j.allocations) {
    if (a.rank != 0) continue;
    auto r = e.reports.find(api::assignment_id(j.id, j.attempt, 0));
    auto n = nodes_.find(a.node);
    if (r != e.reports.end() && r->second.port > 0 && n != nodes_.end())
      endpoint = n->second.rec.address + ":" + std::to_string(r->second.port);
  }
  const bool start = j.state == api::JobState::assigned && running + ok == j.allocations.size();
  // While a node pulls the image the job says so; its ranks' start clears it.
  const bool ours = j.reason.empty() || j.reason.rfind(ClusterState::kPullingImageReason, 0) == 0;
  const bool live = j.state == api::JobState::assigned || j.state == api::JobState::running;
  const std::string reason = live && ours ? pulling_reason(j, e.reports) : j.reason;
  if (!start && endpoint == j.endpoint && reason == j.reason) return false;
  api::Job nj = j;
  nj.endpoint = endpoint;
  nj.reason = reason;
  if (start) {
    nj.state = api::JobState::running;
    nj.started_at_ms = clock_.now_ms();
  }
  txn.batch.jobs.push_back(nj);
  const int64_t seq = job_key(j.id);
  txn.apply.push_back([this, nj, seq, start]() REQUIRES(mu_) {
    jobs_.at(seq).job = nj;
    if (start) log_change(nj, "all ranks running");
  });
  return false;
}

Result<uint64_t> ClusterState::watch_desired(const std::string& node, int64_t version, WatchDone done) {
  MutexLock lk(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return Error::not_found("node " + node + " is not registered");
  if (stopping_ || it->second.version != version) {
    done(api::DesiredState{it->second.version, assignments_locked(node), 0});
    return uint64_t{0};
  }
  if (!polls_.admit()) {
    done(api::DesiredState{version, assignments_locked(node), polls_.poll_after_ms()});
    return uint64_t{0};
  }
  return polls_.park(node, std::move(done));
}

void ClusterState::expire_watch(const std::string& node, uint64_t id) {
  MutexLock lk(mu_);
  std::optional<WatchDone> done = polls_.take(node, id);
  if (!done) return;  // Already answered.
  auto n = nodes_.find(node);
  (*done)(api::DesiredState{n == nodes_.end() ? 0 : n->second.version, assignments_locked(node), 0});
}

void ClusterState::end_polls_locked(const std::string& node, const Error& why) {
  std::vector<WatchDone> list = polls_.take_all(node);
  if (list.empty()) return;
  const Result<api::DesiredState> answer(why);
  for (auto& done : list) done(answer);
}

void ClusterState::token_revoked(const std::string& node, const std::string& token_sha256) {
  MutexLock lk(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  NodeEntry& n = it->second;
  if (n.token.empty() || sha256_hex(n.token) != token_sha256) return;
  // Not stored: the agent's next heartbeat with a valid token sets `degraded` again,
  // and one with the revoked token is refused before it gets here.
  n.degraded = "its agent token was revoked";
  alloc_.upsert_node(node_spec_locked(n));
  ++nodes_changes_;
  end_polls_locked(node, Error::unauthenticated("node " + node + "'s agent token was revoked"));
  spdlog::info("node {}: its agent token was revoked: nothing is placed there until its agent returns", node);
}

void ClusterState::note_version_skew_locked(const std::string& node) {
  auto it = nodes_.find(node);
  versions_.note(node, it == nodes_.end() ? nullptr : &it->second.rec.inventory);
}

void ClusterState::answer_watches_locked(const std::string& node) {
  std::vector<WatchDone> list = polls_.take_all(node);
  if (list.empty()) return;
  auto n = nodes_.find(node);
  const Result<api::DesiredState> state(
      api::DesiredState{n == nodes_.end() ? 0 : n->second.version, assignments_locked(node), 0});
  for (auto& done : list) done(state);
}

std::vector<api::Assignment> ClusterState::assignments_locked(const std::string& node) const {
  std::vector<api::Assignment> out;
  for (int64_t seq : active_.on(node)) {
    const api::Job& j = jobs_.at(seq).job;
    for (const auto& a : j.allocations) {
      if (a.node != node) continue;
      api::Assignment x;
      x.id = api::assignment_id(j.id, j.attempt, a.rank);
      x.job_id = j.id;
      x.attempt = j.attempt;
      x.node_rank = a.rank;
      x.nnodes = j.spec.nodes;
      x.module_ids = a.module_ids;
      x.indices = a.indices;
      x.master_addr = j.master_addr;
      x.master_port = j.master_port;
      x.spec = whole_spec_locked(seq, j);
      x.preemptions = j.preemptions;  // The agent sets TESSEL_PREEMPTED=1.
      x.signals = j.signals;          // Users' signals: the agent delivers the new ones.
      // What placement gave the job on this node (allocations stored before CPUs were
      // placed carry none: then as asked); in the assignment's own fields, which older
      // agents ignore (their spec parser would not).
      x.cpus = a.cpus > 0 ? a.cpus : j.spec.cpus;
      x.memory_mib = a.memory_mib > 0 ? a.memory_mib : j.spec.memory_mib;
      x.spec.cpus = 0;
      x.spec.memory_mib = 0;
      // Dependencies were met before it was placed; project and preemptible are the
      // scheduler's. None is of use to the agent, whose parser may predate them.
      x.spec.after_ok.clear();
      x.spec.after_any.clear();
      x.spec.after_not_ok.clear();
      x.spec.project.clear();
      x.spec.preemptible = false;
      out.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace tessel::scheduler
