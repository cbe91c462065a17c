#include "tessel/agent/task_manager.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "tessel/agent/cpu_choice.hpp"
#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/reconcile.hpp"

namespace tessel::agent {

api::TaskReport make_report(const TaskSnapshot& t, bool supervisor_alive, int64_t now_unix_ms, int64_t launch_grace_ms,
                            const std::string& unrecorded) {
  api::TaskReport r;
  r.assignment_id = t.id;
  r.port = t.port;
  if (t.result) {
    r.state = t.result->state;
    r.exit_code = t.result->exit_code;
    r.signal = t.result->signal;
    r.message = t.result->message;
    r.cpu_seconds = t.result->cpu_seconds;
    r.max_rss_mib = t.result->max_rss_mib;
    r.logs_capped = t.result->logs_capped;
  } else if (supervisor_alive ||
             (unrecorded.empty() && !t.supervisor && now_unix_ms - t.started_unix_ms < launch_grace_ms)) {
    r.state = api::TaskState::running;  // Or its supervisor is still starting.
    if (t.pulling_image && supervisor_alive) r.phase = api::kTaskPhasePullingImage;
  } else if (!unrecorded.empty()) {
    r.state = api::TaskState::exited;  // How is not known: no exit code.
    r.message = "result not recorded: " + unrecorded;
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
  p.workdir = a.spec.workdir.empty() ? dir.work_dir(a.id) : a.spec.workdir;
  p.workdir_as_user = !a.spec.workdir.empty();
  p.time_limit_s = a.spec.time_limit_s.value_or(0);
  p.kill_grace_s = a.spec.kill_grace_s.value_or(api::kDefaultKillGraceS);
  if (a.spec.signal) {
    p.warn_signal = api::signal_number(a.spec.signal->name).value_or(0);
    p.warn_before_s = a.spec.signal->before_s;
  }
  p.log_cap_bytes = cfg.log_cap_bytes;
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
    Entry e;
    e.snap = std::move(t);
    e.signals_done = e.snap.signals_done;  // Absent (an older agent's task): see Entry.
    tasks_[id] = std::move(e);
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
  Entry e;
  e.snap.id = a.id;
  e.snap.assignment = a;
  e.snap.started_unix_ms = clock_.now_ms();
  e.signals_done = a.signals.empty() ? 0 : a.signals.back().id;  // A new attempt's: none sent to it yet.
  if (auto st = dir_.record_started(a); !st) {
    // Already started, or an unsafe id: nothing of ours to report. A state dir that
    // cannot be written: fail it at once, so its report frees the cards.
    if (st.error().code == ErrorCode::unavailable) {
      state_dir_problem_ = "agent state dir: " + st.error().message;  // The node is degraded now.
      return fail_start_locked(std::move(e), state_dir_problem_);
    }
    spdlog::error("assignment {}: not started: {}", a.id, st.error().message);
    return;
  }
  if (auto st = dir_.write_signals_done(a.id, *e.signals_done); !st)
    spdlog::error("assignment {}: signals_done: {}", a.id, st.error().message);
  auto plan = prepare_launch(a, inv, taken_cpus_locked());
  if (!plan) return fail_start_locked(std::move(e), plan.error().message);
  e.snap.launched = true;
  if (plan->cgroup) e.snap.cpus = plan->cgroup->cpus;
  e.snap.port = plan->ranks.front().port;
  auto pid = launcher_.launch(dir_.task_dir(a.id));
  if (!pid) return fail_start_locked(std::move(e), "starting supervisor: " + pid.error().message);
  e.launched_pid = *pid;
  spdlog::info("assignment {}: started (supervisor pid {}, {} rank(s))", a.id, *pid, plan->ranks.size());
  tasks_[a.id] = std::move(e);
}

std::set<int> TaskManager::taken_cpus_locked() const {
  std::set<int> taken;
  for (const auto& [id, e] : tasks_)
    if (!e.snap.result) taken.insert(e.snap.cpus.begin(), e.snap.cpus.end());
  return taken;
}

void TaskManager::sweep_cgroups() {
  if (!cfg_.isolation) return;
  std::set<std::string> keep;
  {
    MutexLock lock(mu_);
    for (auto& [id, e] : tasks_)
      if (!e.snap.result && (alive_locked(e) || !e.snap.supervisor)) keep.insert(id);
  }
  for (const std::string& id : cfg_.isolation->sweep(keep))
    spdlog::info("task cgroup {}: its supervisor is gone; cleared what was left", id);
}

Result<LaunchPlan> TaskManager::prepare_launch(const api::Assignment& a, const api::NodeInventory& inv,
                                               const std::set<int>& taken) const {
  std::vector<int> ports;
  for (int i = 0; i < local_world_size(a); ++i) {
    auto p = cfg_.reserve_port();
    if (!p) return p.error().wrap("reserving TESSEL_PORT");
    ports.push_back(*p);
  }
  auto plan = make_launch_plan(a, inv, dir_, cfg_, ports);
  if (!plan) return plan.error();
  if (cfg_.isolation) {
    auto cg = cfg_.isolation->plan(a, inv, taken);
    if (!cg) return cg.error().wrap("task cgroup");
    plan->cgroup = std::move(*cg);
    if (plan->cgroup && a.spec.task_per_device) {  // Each rank nearest its own card.
      std::vector<int> rank_numa;
      for (size_t i = 0; i < plan->ranks.size() && i < a.indices.size(); ++i) {
        int node = -1;
        for (const api::Device& d : inv.devices)
          if (d.index == a.indices[i]) node = d.numa_node.value_or(-1);
        rank_numa.push_back(node);
      }
      const auto shares = split_cpus(plan->cgroup->cpus, rank_numa, cfg_.isolation->host().numa);
      for (size_t i = 0; i < shares.size() && i < plan->ranks.size(); ++i) plan->ranks[i].cpus = shares[i];
    }
  }
  if (!a.spec.image.empty()) {
    if (!cfg_.containers) return Error{"node " + cfg_.node + " runs no images (its agent found no container runtime)"};
    const std::vector<int> groups = cfg_.run_as ? user_groups(cfg_.run_as->user, cfg_.run_as->gid) : std::vector<int>{};
    if (auto st = containerize(*plan, a, inv, *cfg_.containers, cfg_.dev_root, cfg_.sysfs_root, groups); !st)
      return st.error();
  }
  if (a.spec.workdir.empty()) {
    const int uid = cfg_.run_as ? cfg_.run_as->uid : -1, gid = cfg_.run_as ? cfg_.run_as->gid : -1;
    if (auto st = dir_.make_work_dir(a.id, uid, gid); !st) return st.error().wrap("agent state dir");
  }
  if (plan->container) {
    // The job's workdir is the containers' (bind-mounted); podman and conmon work in the
    // task's own dir, so that nothing of theirs (conmon's `oom` file when the kernel
    // kills a container) lands, root-owned, in the job's.
    struct stat st {};
    const bool exists = ::stat(plan->workdir.c_str(), &st) == 0;
    if (!exists || !S_ISDIR(st.st_mode))
      return Error{"workdir " + plan->workdir + ": " + (exists ? "Not a directory" : std::strerror(errno))};
    plan->workdir = dir_.task_dir(a.id);
  }
  if (auto st = dir_.write_launch(*plan); !st) return st.error().wrap("agent state dir: writing launch plan");
  return plan;
}

void TaskManager::fail_start_locked(Entry e, const std::string& why) {
  spdlog::error("assignment {}: {}", e.snap.id, why);
  TaskResult res{api::TaskState::failed_to_start, std::nullopt, std::nullopt, why};
  // When even this cannot be written, the result lives in memory until acknowledged.
  if (auto st = dir_.write_result(e.snap.id, res); !st)
    spdlog::error("assignment {}: {} (reported from memory)", e.snap.id, st.error().message);
  e.snap.result = res;
  const std::string id = e.snap.id;  // Before e is moved from.
  tasks_[id] = std::move(e);
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
  for (const auto& a : desired.assignments)
    if (auto it = tasks_.find(a.id); it != tasks_.end()) deliver_signals_locked(a, it->second);
}

void TaskManager::deliver_signals_locked(const api::Assignment& a, Entry& e) {
  e.signals = a.signals;
  if (!e.signals_done) e.signals_done = e.signals.empty() ? 0 : e.signals.back().id;  // Loaded: see Entry.
  flush_signals_locked(e);
}

void TaskManager::flush_signals_locked(Entry& e) {
  const int latest = e.signals.empty() ? 0 : e.signals.back().id;
  if (!e.signals_done || latest <= *e.signals_done || e.kill_requested || e.snap.result) return;
  // Only through a supervisor that has recorded itself: by then it takes the signal (it
  // blocks SIGRTMIN before it writes its record). Until then the next report retries.
  if (!e.snap.supervisor || !alive_locked(e)) return;
  // Recorded first: a restart in between loses these signals rather than sending them twice.
  if (auto st = dir_.write_signals_done(e.snap.id, latest); !st)
    spdlog::error("assignment {}: signals_done: {}", e.snap.id, st.error().message);
  for (const auto& sig : e.signals) {
    if (sig.id <= *e.signals_done) continue;
    const auto signo = api::signal_number(sig.name);
    if (!signo) continue;  // The parser refuses such names.
    spdlog::info("assignment {}: signal {} (SIG{}) to its ranks", e.snap.id, sig.id, sig.name);
    if (auto st = launcher_.signal(*e.snap.supervisor, *signo); !st)
      spdlog::error("assignment {}: signal {}: {}", e.snap.id, sig.name, st.error().message);
  }
  e.signals_done = latest;
}

api::TaskReport TaskManager::report_locked(Entry& e) {
  const int64_t now = clock_.now_ms();
  refresh_locked(e);
  // Its supervisor could not write the result and said why as its last act: its ranks are gone.
  if (!e.unrecorded.empty()) return make_report(e.snap, false, now, cfg_.launch_grace_ms, e.unrecorded);
  const bool alive = alive_locked(e);
  if (!alive && !e.snap.result) refresh_locked(e);  // It may have just written its result.
  const bool launched_alive = e.launched_pid && !e.snap.supervisor && process_start_time(*e.launched_pid).has_value();
  // A recorded supervisor gone without a result while the state dir fails: most likely it
  // could not write it either (its word was lost: the agent was down).
  const std::string unrecorded = e.snap.supervisor ? state_dir_problem_ : "";
  return make_report(e.snap, alive || launched_alive, now, cfg_.launch_grace_ms, unrecorded);
}

std::vector<api::TaskReport> TaskManager::reports() {
  std::vector<api::TaskReport> out;
  std::vector<std::string> orphaned;  // Their supervisor died: their cgroup is ours to clear.
  {
    MutexLock lock(mu_);
    for (auto& [id, e] : tasks_) {
      out.push_back(report_locked(e));
      flush_signals_locked(e);  // Those whose supervisor had not yet recorded itself.
      const bool died =
          e.snap.supervisor && !e.snap.result && e.unrecorded.empty() && out.back().state == api::TaskState::exited;
      if (cfg_.isolation && died && !e.cgroup_cleared) {
        e.cgroup_cleared = true;
        orphaned.push_back(id);
      }
    }
  }
  for (const std::string& id : orphaned) {  // Outside the lock: it may wait for processes to go.
    spdlog::warn("assignment {}: its supervisor died; killing what is left in its cgroup", id);
    if (auto st = cfg_.isolation->clear(id); !st) spdlog::error("assignment {}: {}", id, st.error().message);
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
  if (it->second.snap.result || !it->second.unrecorded.empty()) return true;
  return !alive_locked(it->second) && it->second.snap.supervisor.has_value();
}

std::string TaskManager::probe_state_dir() {
  const Status st = dir_.probe();
  std::string problem = st ? "" : "agent state dir: " + st.error().message;
  MutexLock lock(mu_);
  if (problem != state_dir_problem_) {
    if (problem.empty())
      spdlog::info("state dir {} takes writes again: starting tasks again", dir_.root());
    else
      spdlog::error("{} ({}): no task can start here until it takes writes again", problem, dir_.root());
  }
  state_dir_problem_ = problem;
  return problem;
}

std::string TaskManager::state_dir_problem() const {
  MutexLock lock(mu_);
  return state_dir_problem_;
}

void TaskManager::result_not_recorded(const std::string& id, const std::string& why) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  spdlog::error("assignment {}: result not recorded: {}", id, why);
  it->second.unrecorded = why;
}

}  // namespace tessel::agent
