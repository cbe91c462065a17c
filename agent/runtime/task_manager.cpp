#include "tessel/agent/task_manager.hpp"

#include <spdlog/spdlog.h>

#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/reconcile.hpp"

namespace tessel::agent {

api::TaskReport make_report(const TaskSnapshot& t, bool supervisor_alive, int64_t now_unix_ms,
                            int64_t launch_grace_ms) {
  api::TaskReport r;
  r.assignment_id = t.id;
  r.port = t.port;
  if (t.result) {
    r.state = t.result->state;
    r.exit_code = t.result->exit_code;
    r.signal = t.result->signal;
    r.message = t.result->message;
  } else if (supervisor_alive || (!t.supervisor && now_unix_ms - t.started_unix_ms < launch_grace_ms)) {
    r.state = api::TaskState::running;  // Or its supervisor is still starting.
  } else if (!t.supervisor) {
    r.state = api::TaskState::failed_to_start;
    r.message = "the supervisor never started";
  } else {
    r.state = api::TaskState::exited;
    r.exit_code = 255;
    r.message = "the supervisor died without recording a result";
  }
  return r;
}

Result<LaunchPlan> make_launch_plan(const api::Assignment& a, const api::NodeInventory& inv, const StateDir& dir,
                                    const TaskManagerConfig& cfg, const std::vector<int>& ports) {
  LaunchPlan p;
  p.assignment_id = a.id;
  p.workdir = a.spec.workdir.empty() ? dir.task_dir(a.id) : a.spec.workdir;
  p.time_limit_s = a.spec.time_limit_s.value_or(0);
  p.kill_grace_s = a.spec.kill_grace_s.value_or(api::kDefaultKillGraceS);
  if (cfg.run_as) {
    p.uid = cfg.run_as->uid;
    p.gid = cfg.run_as->gid;
    p.user = cfg.run_as->user;
  }
  const int n = local_world_size(a);
  if (static_cast<int>(ports.size()) < n) return Error{"not enough ports reserved"};
  for (int i = 0; i < n; ++i) {
    auto env = task_environment({a, inv, cfg.base_env, cfg.node, i, ports[static_cast<size_t>(i)]});
    if (!env) return env.error().wrap("environment of local rank " + std::to_string(i));
    p.ranks.push_back(
        RankLaunch{a.spec.command, std::move(*env), dir.log_path(a.id, i), ports[static_cast<size_t>(i)]});
  }
  return p;
}

TaskManager::TaskManager(const StateDir& dir, TaskLauncher& launcher, TaskManagerConfig cfg)
    : dir_(dir), launcher_(launcher), cfg_(std::move(cfg)), clock_(cfg_.clock ? *cfg_.clock : system_clock()) {
  if (!cfg_.supervisor_alive)
    cfg_.supervisor_alive = [](const SupervisorRecord& s) { return is_same_process_alive(s.pid, s.start_time); };
}

void TaskManager::load() {
  StateScan scan = dir_.scan();
  MutexLock lock(mu_);
  for (const auto& p : scan.problems) spdlog::error("state dir: {} (skipped)", p);
  started_ = scan.started_ids;
  for (auto& t : scan.tasks) {
    if (t.acknowledged) continue;
    spdlog::info("re-attached task {} ({})", t.id, t.result ? "finished" : "running");
    const std::string id = t.id;  // Before t is moved from.
    tasks_[id] = Entry{std::move(t), std::nullopt, false};
  }
}

bool TaskManager::alive_locked(const Entry& e) const {
  if (e.snap.supervisor) return cfg_.supervisor_alive(*e.snap.supervisor);
  if (e.launched_pid) return process_start_time(*e.launched_pid).has_value();
  return false;
}

void TaskManager::refresh_locked(Entry& e) {
  if (e.snap.result) return;
  auto fresh = dir_.load(e.snap.id);
  if (!fresh) {
    spdlog::warn("task {}: {}", e.snap.id, fresh.error().message);
    return;
  }
  e.snap = std::move(*fresh);
}

void TaskManager::start_locked(const api::Assignment& a, const api::NodeInventory& inv) {
  started_.insert(a.id);
  if (auto st = dir_.record_started(a); !st) {
    spdlog::error("assignment {}: not started: {}", a.id, st.error().message);
    return;
  }
  Entry e;
  e.snap.id = a.id;
  e.snap.assignment = a;
  e.snap.started_unix_ms = clock_.now_ms();
  auto fail = [&](const std::string& msg) REQUIRES(mu_) {
    spdlog::error("assignment {}: {}", a.id, msg);
    TaskResult res{api::TaskState::failed_to_start, std::nullopt, std::nullopt, msg};
    if (auto st = dir_.write_result(a.id, res); !st) spdlog::error("assignment {}: {}", a.id, st.error().message);
    e.snap.result = res;
    tasks_[a.id] = std::move(e);
  };
  std::vector<int> ports;
  for (int i = 0; i < local_world_size(a); ++i) {
    auto p = cfg_.reserve_port();
    if (!p) return fail("reserving TESSEL_PORT: " + p.error().message);
    ports.push_back(*p);
  }
  auto plan = make_launch_plan(a, inv, dir_, cfg_, ports);
  if (!plan) return fail(plan.error().message);
  if (auto st = dir_.write_launch(*plan); !st) return fail("writing launch plan: " + st.error().message);
  e.snap.launched = true;
  e.snap.port = ports.front();
  auto pid = launcher_.launch(dir_.task_dir(a.id));
  if (!pid) return fail("starting supervisor: " + pid.error().message);
  e.launched_pid = *pid;
  spdlog::info("assignment {}: started (supervisor pid {}, {} rank(s))", a.id, *pid, plan->ranks.size());
  tasks_[a.id] = std::move(e);
}

void TaskManager::apply(const api::DesiredState& desired, const api::NodeInventory& inv) {
  MutexLock lock(mu_);
  std::vector<KnownTask> known;
  for (auto& [id, e] : tasks_) {
    refresh_locked(e);
    known.push_back({id, !e.snap.result && (alive_locked(e) || !e.snap.supervisor), e.kill_requested});
  }
  ReconcilePlan plan = reconcile(desired.assignments, known, started_);
  for (const auto& a : plan.start) start_locked(a, inv);
  for (const auto& id : plan.kill) {
    Entry& e = tasks_[id];
    e.kill_requested = true;
    SupervisorRecord sup;
    if (e.snap.supervisor)
      sup = *e.snap.supervisor;
    else if (e.launched_pid)
      sup = SupervisorRecord{*e.launched_pid, process_start_time(*e.launched_pid).value_or(0)};
    else
      continue;
    spdlog::info("assignment {}: no longer desired, stopping (supervisor pid {})", id, sup.pid);
    if (auto st = launcher_.stop(sup); !st) spdlog::error("assignment {}: stop: {}", id, st.error().message);
  }
}

std::vector<api::TaskReport> TaskManager::reports() {
  MutexLock lock(mu_);
  std::vector<api::TaskReport> out;
  for (auto& [id, e] : tasks_) {
    refresh_locked(e);
    bool alive = alive_locked(e);
    if (!alive && !e.snap.result) refresh_locked(e);  // It may have just written its result.
    out.push_back(make_report(
        e.snap, alive || (e.launched_pid && !e.snap.supervisor && process_start_time(*e.launched_pid).has_value()),
        clock_.now_ms(), cfg_.launch_grace_ms));
  }
  return out;
}

void TaskManager::acknowledge(const std::vector<std::string>& ids) {
  MutexLock lock(mu_);
  for (const auto& id : ids) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || !it->second.snap.result) {
      spdlog::debug("acknowledged {}: not a finished task here", id);
      continue;
    }
    if (auto st = dir_.mark_acknowledged(id); !st) spdlog::warn("acknowledge {}: {}", id, st.error().message);
    tasks_.erase(it);
  }
}

int TaskManager::running_count() {
  MutexLock lock(mu_);
  int n = 0;
  for (auto& [id, e] : tasks_)
    if (!e.snap.result) ++n;
  return n;
}

bool TaskManager::known(const std::string& id) {
  MutexLock lock(mu_);
  return started_.count(id) > 0;
}

bool TaskManager::finished(const std::string& id) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return true;  // Acknowledged (final) or unknown.
  refresh_locked(it->second);
  if (it->second.snap.result) return true;
  return !alive_locked(it->second) && it->second.snap.supervisor.has_value();
}

}  // namespace tessel::agent
