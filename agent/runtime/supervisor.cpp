#include "tessel/agent/supervisor.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <spdlog/spdlog.h>
#include <sstream>
#include <vector>

#include "tessel/agent/container_image.hpp"
#include "tessel/api/signals.hpp"
#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/log_cap.hpp"
#include "tessel/base/env_block.hpp"
#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/task_events.hpp"
#include "tessel/agent/task_files.hpp"

namespace bp = boost::process;

namespace tessel::agent {
namespace {

using Clock = std::chrono::steady_clock;

// The steps of ChildSetup that can fail, and how one failed: what the child writes, in
// one write(2), on a pipe of ours before it ends. (Not exec.set_error(): Boost.Process
// 1.74 sends its message in three writes that the parent may read apart, and it lets
// the child go on to exec the job, as root after a failed setuid.)
enum class ChildStep : int { setsid, dup2, setgid, setuid, workdir, cgroup, affinity };
struct ChildFailure {
  ChildStep step = ChildStep::setsid;
  int error = 0;  // errno.
};

// Runs in the forked child before execve: only async-signal-safe calls. A failed step
// is written to failure_fd and ends the child.
struct ChildSetup : bp::extend::handler {
  int log_fd = -1;
  int null_fd = -1;
  int failure_fd = -1;
  std::optional<int> uid, gid;
  std::vector<gid_t> groups;
  std::string workdir;
  bool workdir_as_user = true;    // See LaunchPlan::workdir_as_user.
  std::vector<int> cgroup_procs;  // The task cgroup's cgroup.procs, open: joined first.
  std::optional<cpu_set_t> cpus;  // The rank's share of the task's CPUs, if pinned.

  [[noreturn]] void fail(ChildStep step) const {
    const ChildFailure f{step, errno};
    (void)!::write(failure_fd, &f, sizeof f);
    ::_exit(127);
  }

  void enter_workdir() const {
    if (::chdir(workdir.c_str()) != 0) fail(ChildStep::workdir);
  }

  template <class Executor>
  void on_exec_setup(Executor&) const {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    // Into the task's cgroup before anything of the job runs (and while still root).
    if (!cgroup_procs.empty() && !join_task_cgroup(cgroup_procs)) fail(ChildStep::cgroup);
    if (cpus && ::sched_setaffinity(0, sizeof *cpus, &*cpus) != 0) fail(ChildStep::affinity);
    if (::setsid() < 0) fail(ChildStep::setsid);
    if (::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) fail(ChildStep::dup2);
    if (!workdir_as_user) enter_workdir();
    if (gid && (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(static_cast<gid_t>(*gid)) != 0))
      fail(ChildStep::setgid);
    if (uid && ::setuid(static_cast<uid_t>(*uid)) != 0) fail(ChildStep::setuid);
    if (workdir_as_user) enter_workdir();
  }
};

struct Rank {
  int pid = 0;
  bool done = false;
  int status = 0;
  int order = 0;  // 1 for the first rank to end, 2 for the next, ...
};

std::vector<boost::filesystem::path> path_dirs(const std::map<std::string, std::string>& env) {
  std::vector<boost::filesystem::path> dirs;
  auto it = env.find("PATH");
  std::istringstream in(it == env.end() ? "/usr/bin:/bin" : it->second);
  std::string d;
  while (std::getline(in, d, ':'))
    if (!d.empty()) dirs.emplace_back(d);
  return dirs;
}

// The supplementary groups of the plan's user (only its gid when it names none).
std::vector<gid_t> supplementary_groups(const LaunchPlan& plan) {
  if (!plan.gid) return {};
  const auto gid = static_cast<gid_t>(*plan.gid);
  if (plan.user.empty()) return {gid};
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (getgrouplist(plan.user.c_str(), gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    getgrouplist(plan.user.c_str(), gid, groups.data(), &n);
  }
  groups.resize(static_cast<size_t>(n));
  return groups;
}

ChildSetup child_setup(const LaunchPlan& plan, int log_fd, int null_fd, int failure_fd,
                       const std::vector<int>& cgroup_procs) {
  ChildSetup setup;
  setup.cgroup_procs = cgroup_procs;
  setup.log_fd = log_fd;
  setup.null_fd = null_fd;
  setup.failure_fd = failure_fd;
  setup.uid = plan.uid;
  setup.gid = plan.gid;
  setup.groups = supplementary_groups(plan);
  setup.workdir = plan.workdir;
  setup.workdir_as_user = plan.workdir_as_user;
  return setup;
}

// What the child wrote on the failure pipe (nothing once it exec'd: the pipe is
// O_CLOEXEC). bp::child returns only after the exec or the child's end, so this never
// waits; the caller closed its own write end.
std::optional<ChildFailure> read_child_failure(int fd) {
  ChildFailure f;
  ssize_t n;
  do n = ::read(fd, &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof f)) return std::nullopt;
  return f;
}

// "workdir /x: No such file or directory", "setuid: Resource temporarily unavailable".
Error child_error(const ChildFailure& f, const LaunchPlan& plan) {
  static constexpr const char* kSteps[] = {
      "setsid", "dup2", "setgid", "setuid", "workdir", "joining the task cgroup", "sched_setaffinity"};
  std::string step = kSteps[static_cast<int>(f.step)];
  if (f.step == ChildStep::workdir) step += " " + plan.workdir;
  return Error{step + ": " + std::strerror(f.error)};
}

// Starts one rank; returns its pid or an error message.
Result<int> start_rank(const LaunchPlan& plan, const RankLaunch& r, int null_fd, const std::vector<int>& cgroup_procs) {
  boost::filesystem::path exe = r.argv[0];
  if (r.argv[0].find('/') == std::string::npos) {
    exe = bp::search_path(r.argv[0], path_dirs(r.env));
    if (exe.empty()) return Error{"exec " + r.argv[0] + ": not found in PATH"};
  }
  int log_fd = ::open(r.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return Error{"open " + r.log_path + ": " + std::strerror(errno)};
  int failure[2];
  if (::pipe2(failure, O_CLOEXEC) != 0) {
    ::close(log_fd);
    return Error{std::string("pipe: ") + std::strerror(errno)};
  }
  ChildSetup setup = child_setup(plan, log_fd, null_fd, failure[1], cgroup_procs);
  if (!r.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : r.cpus) CPU_SET(c, &set);
    setup.cpus = set;
  }
  const tessel::EnvBlock env(r.env);
  std::vector<std::string> args(r.argv.begin() + 1, r.argv.end());
  std::error_code ec;
  // No bp::start_dir: it ignores a failed chdir, and runs before the switch of user.
  bp::child c(bp::exe = exe.string(), bp::args = args, env, setup, ec);
  ::close(log_fd);
  ::close(failure[1]);
  const auto failed = read_child_failure(failure[0]);
  ::close(failure[0]);
  if (ec) return Error{"exec " + r.argv[0] + ": " + ec.message()};
  if (failed) {
    std::error_code reaped;
    c.wait(reaped);  // It ended before exec.
    return child_error(*failed, plan);
  }
  int pid = c.id();
  c.detach();  // We reap it ourselves with waitpid.
  return pid;
}

void signal_groups(const std::vector<Rank>& ranks, int sig) {
  for (const auto& r : ranks)
    if (r.pid > 0) ::kill(-r.pid, sig);
}

// SIGTERM to the processes of the task's cgroup outside its ranks' process groups (which
// signal_groups reached): what the task started in sessions of their own.
void terminate_others(const TaskCgroup& cg, const std::vector<Rank>& ranks) {
  for (int pid : task_cgroup_pids(cg)) {
    const pid_t group = ::getpgid(pid);
    if (std::none_of(ranks.begin(), ranks.end(), [&](const Rank& r) { return r.pid == group; })) ::kill(pid, SIGTERM);
  }
}

TaskResult summarize(const std::vector<Rank>& ranks, const std::string& why) {
  TaskResult res;
  res.state = api::TaskState::exited;
  res.exit_code = 0;
  std::vector<const Rank*> by_exit;
  by_exit.reserve(ranks.size());
  for (const auto& r : ranks) by_exit.push_back(&r);
  std::sort(by_exit.begin(), by_exit.end(), [](const Rank* a, const Rank* b) { return a->order < b->order; });
  for (const Rank* rp : by_exit) {
    const Rank& r = *rp;
    int code = 0;
    if (WIFSIGNALED(r.status)) {
      if (!res.signal) res.signal = WTERMSIG(r.status);
      code = 128 + WTERMSIG(r.status);
    } else if (WIFEXITED(r.status)) {
      code = WEXITSTATUS(r.status);
    }
    if (code != 0 && *res.exit_code == 0) res.exit_code = code;
  }
  res.message = why;
  return res;
}

// The task's cgroup: made before its ranks start, emptied (nothing escapes by setsid
// or a double fork) and removed once they have ended. Null plan.cgroup: none.
class CgroupGuard {
 public:
  explicit CgroupGuard(const std::optional<TaskCgroup>& cg) : cg_(cg) {}
  CgroupGuard(const CgroupGuard&) = delete;
  CgroupGuard& operator=(const CgroupGuard&) = delete;
  ~CgroupGuard() { close_procs(); }

  Status create() {
    if (!cg_) return ok_status();
    if (auto st = create_task_cgroup(*cg_); !st) return st.error().wrap("task cgroup");
    created_ = true;
    auto fds = open_task_cgroup_procs(*cg_);
    if (!fds) return fds.error().wrap("task cgroup");
    procs_ = std::move(*fds);
    return ok_status();
  }
  const std::vector<int>& procs() const { return procs_; }
  void close_procs() {
    for (int fd : procs_) ::close(fd);
    procs_.clear();
  }
  // Kills what is left, reads the task's use, removes the cgroup.
  TaskUsage finish() {
    close_procs();
    if (!cg_ || !created_) return {};
    if (auto st = kill_task_cgroup(*cg_); !st) spdlog::error("supervisor: task cgroup: {}", st.error().message);
    TaskUsage u = read_task_usage(*cg_);
    if (auto st = remove_task_cgroup(*cg_); !st) spdlog::error("supervisor: task cgroup: {}", st.error().message);
    created_ = false;
    return u;
  }

 private:
  const std::optional<TaskCgroup>& cg_;
  bool created_ = false;
  std::vector<int> procs_;
};

// The task's result with its use; a task the kernel killed at its memory limit says so.
TaskResult with_usage(TaskResult res, const std::vector<Rank>& ranks, const TaskUsage& u, int64_t limit_mib,
                      bool container) {
  res.cpu_seconds = u.cpu_seconds;
  res.max_rss_mib = u.max_rss_mib;
  // A container whose process was killed by SIGKILL: its podman exits 137.
  const auto container_killed = [&](const Rank& r) {
    return container && r.done && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 128 + SIGKILL;
  };
  const auto killed = [&](const Rank& r) {
    return (r.done && WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) || container_killed(r);
  };
  // v1 counts an OOM kill in the killed process's cgroup: a container's is gone by now
  // (podman removed it), so the task's limit reached and a killed container are the sign.
  const bool container_oom = u.limit_hit && std::any_of(ranks.begin(), ranks.end(), container_killed);
  if ((u.oom_kills <= 0 && !container_oom) || limit_mib <= 0) return res;
  std::string who = "a process of the task";  // Unless a rank itself was the one killed.
  for (size_t i = 0; i < ranks.size(); ++i)
    if (killed(ranks[i])) {
      who = "rank " + std::to_string(i);
      break;
    }
  res.message = "out of memory: " + who + " killed at its " + std::to_string(limit_mib) + " MiB limit";
  if (res.exit_code == 0) res.exit_code = 128 + SIGKILL;  // Its work is lost: the job fails.
  return res;
}

// Appends `line` to the file at `path` (made 0600 when new); false when it cannot.
bool append_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok;
}

// The assignment id: the task dir's name (known even when launch.json is unreadable).
std::string task_id_of(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir.substr(dir.rfind('/') + 1);
}

// Writes result.json durably, and only then tells the agent: whatever the agent reads
// after the datagram includes the result. When the result cannot be written, the
// datagram says why instead: the agent reports the task's result as not recorded.
int finish(const std::string& dir, const TaskResult& res, const TaskEventSender& agent) {
  auto st = write_file_durable(dir + "/result.json", serialize(res));
  if (!st) {
    spdlog::error("supervisor: writing result {}: {}", serialize(res), st.error().message);
    agent.send(task_id_of(dir), st.error().message);
    return 1;
  }
  spdlog::info("supervisor: result {}", serialize(res));
  agent.send(task_id_of(dir));
  return 0;
}

TaskResult start_failure(std::string message) {
  TaskResult r;
  r.state = api::TaskState::failed_to_start;
  r.message = std::move(message);
  return r;
}

// The ranks of a running task, watched until the last one ends: the warning signal
// and the time limit, a stop's SIGTERM and (after the grace) SIGKILL, users' signals,
// the log cap, each rank's exit.
class RankWatch {
 public:
  RankWatch(const LaunchPlan& plan, std::vector<Rank>& ranks) : plan_(plan), ranks_(ranks) {
    if (plan_.time_limit_s <= 0) return;
    limit_ = Clock::now() + std::chrono::seconds(plan_.time_limit_s);
    if (plan_.warn_signal > 0)
      warn_at_ = *limit_ - std::chrono::seconds(std::min(plan_.warn_before_s, plan_.time_limit_s));
  }

  // Waits (taking the signals in `set`) until every rank has ended.
  void run(const sigset_t& set) {
    size_t live = ranks_.size();
    while (live > 0) {
      cap_logs();
      auto now = Clock::now();
      if (warn_at_ && now >= *warn_at_) warn();
      if (limit_ && now >= *limit_) stop("time limit of " + std::to_string(plan_.time_limit_s) + "s reached");
      if (kill_at_ && now >= *kill_at_) {
        signal_groups(ranks_, SIGKILL);
        kill_at_ = now + std::chrono::hours(24);
      }
      auto next = now + (plan_.log_cap_bytes > 0 ? std::chrono::seconds(1) : std::chrono::seconds(5));
      if (limit_ && !kill_at_) next = std::min(next, *limit_);
      if (warn_at_) next = std::min(next, *warn_at_);
      if (kill_at_) next = std::min(next, *kill_at_);
      auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(next - now);
      if (wait.count() < 0) wait = {};
      timespec ts{static_cast<time_t>(wait.count() / 1000000000), static_cast<long>(wait.count() % 1000000000)};
      siginfo_t info{};
      int sig = sigtimedwait(&set, &info, &ts);
      if (sig == SIGTERM || sig == SIGINT) stop("stopped by the agent");
      if (sig == SIGRTMIN) forward(info);
      reap(live);
    }
  }

  // Logs past the cap are cut back at every look (at least once a second) and at the end.
  void cap_logs() {
    if (plan_.log_cap_bytes <= 0) return;
    for (size_t i = 0; i < plan_.ranks.size(); ++i)
      if (enforce_log_cap(plan_.ranks[i].log_path, plan_.log_cap_bytes) &&
          std::find(capped_.begin(), capped_.end(), static_cast<int>(i)) == capped_.end()) {
        spdlog::warn("supervisor: rank {}'s output passed the log cap of {} bytes: the rest is dropped", i,
                     plan_.log_cap_bytes);
        capped_.push_back(static_cast<int>(i));
      }
  }

  // After a stop, the end of its grace (nullopt: no stop).
  const std::optional<Clock::time_point>& grace_end() const { return grace_end_; }
  // Why the task was stopped (empty: it was not).
  const std::string& why() const { return why_; }
  // The ranks whose logs were capped, in order.
  std::vector<int> take_capped() {
    std::sort(capped_.begin(), capped_.end());
    return std::move(capped_);
  }

 private:
  // A user's signal, from the agent (TaskLauncher::signal): SIGRTMIN carrying the
  // signal's number, sent on to every rank's process group when it is one of the list.
  void forward(const siginfo_t& info) {
    const int signo = info.si_value.sival_int;
    if (!api::is_job_signal(signo)) {
      spdlog::warn("supervisor: ignored a request for signal {}: not one a job may be sent", signo);
      return;
    }
    spdlog::info("supervisor: signal {} to every rank", signo);
    signal_groups(ranks_, signo);
  }

  // The warning signal, once, unless a stop came first.
  void warn() {
    warn_at_.reset();
    if (kill_at_) return;
    spdlog::info("supervisor: warning signal {} to every rank, {} s before the time limit", plan_.warn_signal,
                 plan_.warn_before_s);
    signal_groups(ranks_, plan_.warn_signal);
  }

  // SIGTERM to every rank (and the rest of the task's cgroup); SIGKILL after the grace.
  void stop(const std::string& reason) {
    if (kill_at_) return;
    why_ = reason;
    signal_groups(ranks_, SIGTERM);
    if (plan_.cgroup) terminate_others(*plan_.cgroup, ranks_);  // Their grace too.
    kill_at_ = Clock::now() + std::chrono::seconds(plan_.kill_grace_s);
    grace_end_ = kill_at_;
  }

  // Reaps every rank that has ended; a failed one stops the others.
  void reap(size_t& live) {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& r : ranks_) {
        if (r.pid != pid || r.done) continue;
        r.done = true;
        r.status = status;
        r.order = static_cast<int>(ranks_.size() - live) + 1;
        --live;
        ::kill(-r.pid, SIGKILL);  // Stragglers left in the rank's group.
        bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (failed && live > 0) stop("rank failed; stopping the other ranks");
      }
    }
  }

  const LaunchPlan& plan_;
  std::vector<Rank>& ranks_;
  std::optional<Clock::time_point> limit_;
  std::optional<Clock::time_point> warn_at_;  // When the warning signal is due; reset once sent.
  std::optional<Clock::time_point> kill_at_;
  std::optional<Clock::time_point> grace_end_;  // Of a stop: kill_at_ as it was first set.
  std::string why_;
  std::vector<int> capped_;
};

// Starts every rank of `plan` in `cgroup`; when one fails to start, kills and reaps
// those already started and returns its error.
Result<std::vector<Rank>> start_ranks(const LaunchPlan& plan, const std::vector<int>& cgroup_procs) {
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::vector<Rank> ranks(plan.ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    auto pid = start_rank(plan, plan.ranks[i], null_fd, cgroup_procs);
    if (!pid) {
      spdlog::error("supervisor: rank {}: {}", i, pid.error().message);
      signal_groups(ranks, SIGKILL);
      for (auto& r : ranks)
        if (r.pid > 0) ::waitpid(r.pid, nullptr, 0);
      return pid.error();
    }
    ranks[i].pid = *pid;
  }
  return ranks;
}

// Blocks the signals the supervisor takes with sigtimedwait (SIGTERM, SIGINT, SIGCHLD,
// and SIGRTMIN: a user's signal for the ranks) and ignores SIGPIPE and SIGHUP. Returns
// the blocked set.
sigset_t block_supervisor_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGRTMIN);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  return set;
}

}  // namespace

int run_supervisor(const std::string& dir) {
  const sigset_t set = block_supervisor_signals();
  const int self = static_cast<int>(::getpid());
  auto start = process_start_time(self);
  // No fsync: the record only matters while this boot (and this process) lasts.
  auto rec = write_file_atomic(dir + "/supervisor.json", serialize(SupervisorRecord{self, start.value_or(0)}));
  if (!rec) spdlog::error("supervisor: {}", rec.error().message);
  const TaskEventSender agent(events_socket_path_for_task(dir));

  auto text = read_small_file(dir + "/launch.json", 16 << 20);
  auto plan = text ? parse_launch_plan(*text) : Result<LaunchPlan>(text.error());
  if (!plan) return finish(dir, start_failure("reading launch plan: " + plan.error().message), agent);

  CgroupGuard cgroup(plan->cgroup);
  if (auto st = cgroup.create(); !st) {
    spdlog::error("supervisor: {}", st.error().message);
    cgroup.finish();
    return finish(dir, start_failure(st.error().message), agent);
  }
  const std::string container_log = dir + "/container.log";
  if (plan->container) {            // The image, before any rank starts.
    const auto say_pulling = [&] {  // In each rank's log, where `tessel logs` shows it.
      auto it = plan->ranks.front().env.find("TESSEL_NODE");
      const std::string line = "tessel: pulling image " + plan->container->image +
                               (it == plan->ranks.front().env.end() ? "" : " on " + it->second) + "\n";
      for (const RankLaunch& r : plan->ranks) (void)append_line(r.log_path, line);
      // The agent reports the pull at once (the job's reason and event say it).
      if (auto st = write_file_atomic(dir + "/" + kPullingImageFile, plan->container->image + "\n"); !st)
        spdlog::warn("supervisor: {}", st.error().message);
      agent.send(task_id_of(dir));
    };
    if (auto st = ensure_image(*plan->container, plan->ranks.front().env, container_log, say_pulling); !st) {
      spdlog::error("supervisor: {}", st.error().message);
      cgroup.finish();
      return finish(dir, start_failure(st.error().message), agent);
    }
  }
  auto started = start_ranks(*plan, cgroup.procs());
  if (!started) {
    if (plan->container) remove_containers(*plan->container, plan->ranks.front().env, container_log);
    cgroup.finish();
    return finish(dir, start_failure(started.error().message), agent);
  }
  std::vector<Rank>& ranks = *started;
  cgroup.close_procs();
  if (plan->container) ::unlink((dir + "/" + kPullingImageFile).c_str());  // The ranks' event below reports it.
  spdlog::info("supervisor: started {} rank(s) of {}", ranks.size(), plan->assignment_id);
  agent.send(task_id_of(dir));  // Its ranks are up (and supervisor.json is written).

  RankWatch watch(*plan, ranks);
  watch.run(set);
  signal_groups(ranks, SIGKILL);
  // A stop gives the whole task its grace: what the ranks left may still be ending.
  const auto& grace_end = watch.grace_end();
  while (plan->cgroup && grace_end && Clock::now() < *grace_end && !task_cgroup_pids(*plan->cgroup).empty()) {
    timespec step{0, 20'000'000};
    ::nanosleep(&step, nullptr);
  }
  // A rank's podman killed after the grace leaves its container behind: it goes here.
  if (plan->container) remove_containers(*plan->container, plan->ranks.front().env, container_log);
  const TaskUsage usage = cgroup.finish();  // Whatever they left behind dies here.
  const int64_t memory_limit = plan->cgroup ? plan->cgroup->memory_limit_mib : 0;
  watch.cap_logs();
  TaskResult result =
      with_usage(summarize(ranks, watch.why()), ranks, usage, memory_limit, plan->container.has_value());
  result.logs_capped = watch.take_capped();
  return finish(dir, result, agent);
}

}  // namespace tessel::agent
