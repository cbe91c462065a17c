#include "tessel/agent/state_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "tessel/agent/durable_file.hpp"

namespace fs = std::filesystem;

namespace tessel::agent {

bool is_safe_task_id(const std::string& id) {
  if (id.empty() || id.size() > 200 || id == "." || id == "..") return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

static bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

// Modes: the job's user must reach its own work dir (tasks/<id>/work, 0700, its own)
// by its absolute path, so the dirs above it let everyone traverse (0711) and no one
// but the agent list them; every file in them is 0600 (durable_file.hpp), so a task
// dir's name, if guessed, opens nothing (env secrets, logs).
constexpr mode_t kTraverseOnly = 0711;

static Status chmod_dir(const std::string& dir) {
  if (::chmod(dir.c_str(), kTraverseOnly) != 0) return Error::unavailable("chmod " + dir + ": " + std::strerror(errno));
  return ok_status();
}

Status StateDir::init() const {
  if (auto st = make_dir_durable(root_ + "/tasks"); !st) return st;
  for (const auto& d : {root_, root_ + "/tasks"})
    if (auto st = chmod_dir(d); !st) return st;
  if (exists(started_log())) return ok_status();
  return write_file_durable(started_log(), "");  // Created (and its dir entry synced) once.
}

Status StateDir::record_started(const api::Assignment& a) const {
  if (!is_safe_task_id(a.id)) return Error::invalid("assignment id '" + a.id + "' is not a safe file name");
  const std::string dir = task_dir(a.id);
  if (exists(dir + "/assignment.json")) return Error::conflict("assignment " + a.id + " was already started");
  if (auto st = append_line_durable(started_log(), a.id); !st) return Error::unavailable(st.error().message);
  // Made here, or left by a start that failed before assignment.json.
  if (::mkdir(dir.c_str(), kTraverseOnly) != 0 && errno != EEXIST)
    return Error::unavailable("mkdir " + dir + ": " + std::strerror(errno));
  if (auto st = chmod_dir(dir); !st) return st;
  if (auto st = write_file_atomic(dir + "/assignment.json", serialize(a)); !st)
    return Error::unavailable(st.error().message);
  return ok_status();
}

Status StateDir::make_work_dir(const std::string& id, int uid, int gid) const {
  const std::string dir = work_dir(id);
  if (::mkdir(dir.c_str(), 0700) != 0) return errno_error("mkdir " + dir);
  if (::chown(dir.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) return errno_error("chown " + dir);
  return ok_status();
}

Status StateDir::probe() const { return write_probe(root_ + "/.write-probe"); }

Status StateDir::write_launch(const LaunchPlan& p) const {
  return write_file_atomic(task_dir(p.assignment_id) + "/launch.json", serialize(p));
}

Status StateDir::write_result(const std::string& id, const TaskResult& r) const {
  return write_file_durable(task_dir(id) + "/result.json", serialize(r));
}

Status StateDir::mark_acknowledged(const std::string& id) const {
  return write_file_durable(task_dir(id) + "/acknowledged", "");
}

Status StateDir::write_signals_done(const std::string& id, int signal_id) const {
  return write_file_atomic(task_dir(id) + "/signals_done", std::to_string(signal_id) + "\n");
}

namespace {
// signals_done's id; nullopt when the file is absent or not one non-negative decimal.
std::optional<int> read_signals_done(const std::string& path) {
  auto text = read_small_file(path, 64);
  if (!text) return std::nullopt;
  std::string_view v = *text;
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty() || n < 0) return std::nullopt;
  return n;
}
}  // namespace

Result<TaskSnapshot> StateDir::load(const std::string& id) const {
  if (!is_safe_task_id(id)) return Error::invalid("task id '" + id + "' is not a safe file name", "id");
  const std::string dir = task_dir(id);
  TaskSnapshot t;
  t.id = id;
  auto text = read_small_file(dir + "/assignment.json", 16 << 20);
  if (!text) return text.error();
  auto a = parse_assignment_file(*text);
  if (!a) return a.error();
  if (a->id != id) return Error::invalid("assignment.json: id '" + a->id + "' does not match the directory", "id");
  t.assignment = std::move(*a);
  struct stat st;
  if (::stat((dir + "/assignment.json").c_str(), &st) == 0)
    t.started_unix_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  if (exists(dir + "/supervisor.json")) {
    auto s = read_small_file(dir + "/supervisor.json");
    auto rec = s ? parse_supervisor_record(*s) : Result<SupervisorRecord>(s.error());
    if (!rec) return rec.error();
    t.supervisor = *rec;
  }
  if (exists(dir + "/result.json")) {
    auto s = read_small_file(dir + "/result.json");
    auto res = s ? parse_task_result(*s) : Result<TaskResult>(s.error());
    if (!res) return res.error();
    t.result = *res;
  }
  if (exists(dir + "/launch.json")) {
    t.launched = true;
    auto s = read_small_file(dir + "/launch.json", 16 << 20);
    auto plan = s ? parse_launch_plan(*s) : Result<LaunchPlan>(s.error());
    if (plan) {  // A bad plan ends as the supervisor's failure.
      t.port = plan->ranks.front().port;
      if (plan->cgroup) t.cpus = plan->cgroup->cpus;
    }
  }
  t.acknowledged = exists(dir + "/acknowledged");
  if (exists(dir + "/signals_done")) t.signals_done = read_signals_done(dir + "/signals_done");
  t.pulling_image = exists(dir + "/" + kPullingImageFile);
  return t;
}

StateScan StateDir::scan() const {
  StateScan out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root_ + "/tasks", ec)) {
    const std::string id = e.path().filename().string();
    if (!e.is_directory() || !is_safe_task_id(id)) continue;
    out.started_ids.insert(id);
    auto t = load(id);
    if (!t) {
      out.problems.push_back("tasks/" + id + ": " + t.error().message);
      continue;
    }
    out.tasks.push_back(std::move(*t));
  }
  if (ec) out.problems.push_back(root_ + "/tasks: " + ec.message());
  if (auto log = read_small_file(started_log(), 256 << 20)) {
    size_t start = 0;
    for (size_t nl; (nl = log->find('\n', start)) != std::string::npos; start = nl + 1)
      if (nl > start) out.started_ids.insert(log->substr(start, nl - start));
  }
  return out;
}

int StateDir::remove_acknowledged_older_than(int64_t now_unix_ms, int64_t max_age_ms) const {
  int removed = 0;
  for (const auto& t : scan().tasks) {
    if (!t.acknowledged || now_unix_ms - t.started_unix_ms < max_age_ms) continue;
    std::error_code ec;
    fs::remove_all(task_dir(t.id), ec);
    if (!ec) ++removed;
  }
  return removed;
}

}  // namespace tessel::agent
