#include "chaos_cluster.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

extern char** environ;

namespace tessel::chaos {

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);  // Poll interval, not a wait for an outcome.
  }
  return pred();
}

// ---- processes -------------------------------------------------------------

int kill_processes_mentioning(const std::string& needle) {
  int killed = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == ::getpid()) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
  }
  ::closedir(d);
  return killed;
}

TempDir::TempDir(const std::string& name) {
  path_ = fs::temp_directory_path() / ("tessel-chaos-" + name + "-" + std::to_string(::getpid()));
  kill_processes_mentioning(path_.string());
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  // Supervisors and tasks are detached from the agent; they all name this dir.
  for (int i = 0; i < 3 && kill_processes_mentioning(path_.string()) > 0; ++i) {
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

Child::Child(ChildOptions o) : o_(std::move(o)) {
  std::vector<std::string> envs;
  std::set<std::string> overridden;
  for (const auto& [k, v] : o_.env) {
    envs.push_back(k + "=" + v);
    overridden.insert(k);
  }
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (!overridden.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  std::vector<char*> argv, envp;
  for (auto& a : o_.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ == 0) {
    int out = ::open(o_.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = ::open(o_.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setpgid(0, 0);  // Its own group: the test's terminal signals don't reach it.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (o_.rlimit_fsize_bytes) {
      ::signal(SIGXFSZ, SIG_IGN);  // Writes past the limit fail with EFBIG instead of killing.
      rlimit rl{static_cast<rlim_t>(*o_.rlimit_fsize_bytes), static_cast<rlim_t>(RLIM_INFINITY)};
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
}

Child::~Child() { kill9(); }

Child::Child(Child&& o) noexcept : pid_(o.pid_), o_(std::move(o.o_)) { o.pid_ = -1; }
Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    kill9();
    pid_ = o.pid_;
    o_ = std::move(o.o_);
    o.pid_ = -1;
  }
  return *this;
}

bool Child::running() {
  if (pid_ <= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void Child::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

int Child::terminate() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int st = -1;
  bool done = eventually([&] { return ::waitpid(pid_, &st, WNOHANG) == pid_; }, 20s);
  if (!done) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
  }
  pid_ = -1;
  return st;
}

int Child::wait_listening(std::chrono::milliseconds timeout) {
  int port = 0;
  eventually(
      [&] {
        std::ifstream in(o_.stdout_path);
        std::string line;
        while (std::getline(in, line)) {
          if (line.rfind("listening on ", 0) != 0) continue;
          auto colon = line.rfind(':');
          if (colon == std::string::npos) continue;
          port = std::atoi(line.c_str() + colon + 1);
        }
        return port > 0 || !running();
      },
      timeout);
  return port;
}

std::string Child::stderr_text() const {
  std::ifstream in(o_.stderr_path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

int run_and_wait(std::vector<std::string> argv, const std::string& log) {
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    for (const char* dir : {"/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/"}) {
      if (::access((dir + argv[0]).c_str(), X_OK) == 0) {
        argv[0] = dir + argv[0];
        break;
      }
    }
  }
  ChildOptions o;
  o.argv = std::move(argv);
  o.stdout_path = log;
  o.stderr_path = log;
  Child c(std::move(o));
  pid_t pid = c.pid();
  int st = 0;
  bool done = eventually([&] { return ::waitpid(pid, &st, WNOHANG) == pid; }, 20s);
  if (!done) return -1;  // ~Child kills it.
  c.forget();
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// ---- REST ------------------------------------------------------------------

namespace {
Api::Reply to_reply(const httplib::Result& r) {
  Api::Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = json::parse(r->body, nullptr, false);
  return out;
}
}  // namespace

Api::Reply Api::post(const std::string& path, const json& body) const {
  httplib::Client c(host_, port_);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  return to_reply(c.Post(path.c_str(), body.dump(), "application/json"));
}

Api::Reply Api::get(const std::string& path) const {
  httplib::Client c(host_, port_);
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  return to_reply(c.Get(path.c_str()));
}

std::vector<json> Api::all_jobs() const {
  std::vector<json> out;
  std::string after;
  for (;;) {
    auto r = get("/v1/jobs?limit=1000" + (after.empty() ? "" : "&after=" + after));
    if (r.status != 200 || !r.body.is_object()) return out;
    for (auto& j : r.body["jobs"]) out.push_back(j);
    if (!r.body.contains("next")) return out;
    after = r.body["next"].get<std::string>();
  }
}

std::optional<json> Api::job(const std::string& id) const {
  auto r = get("/v1/jobs/" + id);
  if (r.status != 200) return std::nullopt;
  return r.body;
}

std::string Api::job_state(const std::string& id) const {
  auto j = job(id);
  return j ? j->value("state", "") : "";
}

std::optional<json> Api::node(const std::string& name) const {
  auto r = get("/v1/nodes/" + name);
  if (r.status != 200) return std::nullopt;
  return r.body;
}

std::vector<json> Api::nodes() const {
  auto r = get("/v1/nodes");
  std::vector<json> out;
  if (r.status != 200) return out;
  const json& arr = r.body.is_array() ? r.body : r.body.value("nodes", json::array());
  for (const auto& n : arr) out.push_back(n);
  return out;
}

// ---- cluster ---------------------------------------------------------------

namespace {
// $NAME when set (to run against other builds or installed binaries), else `dflt`.
std::string env_or(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}
}  // namespace

std::string scheduler_bin() { return env_or("TESSEL_CHAOS_SCHEDULER", TESSEL_SCHEDULER_BIN); }
std::string agent_bin() { return env_or("TESSEL_CHAOS_AGENT", TESSEL_AGENT_BIN); }
std::string fake_hl_smi_bin() { return env_or("TESSEL_CHAOS_HL_SMI", FAKE_HL_SMI_BIN); }
std::string gaudi2_fixture() { return std::string(TESSEL_FIXTURES_DIR) + "/hl-smi/gaudi2-hl225-8.csv"; }

Child start_scheduler(const TempDir& dir, const std::string& tag, const std::string& db, const std::string& listen,
                      std::vector<std::string> extra, std::optional<long> rlimit_fsize) {
  ChildOptions o;
  o.argv = {scheduler_bin(), "--listen", listen, "--db", db, "--log-level", "info"};
  for (auto& e : extra) o.argv.push_back(e);
  o.stdout_path = dir.str("scheduler-" + tag + ".out");
  o.stderr_path = dir.str("scheduler-" + tag + ".log");
  std::error_code ec;
  fs::remove(o.stdout_path, ec);
  o.rlimit_fsize_bytes = rlimit_fsize;
  return Child(std::move(o));
}

Child start_agent(const TempDir& dir, const AgentSpec& s) {
  ChildOptions o;
  o.argv = s.prefix;
  for (const std::string& a : {agent_bin(),
                               std::string("--scheduler"),
                               s.scheduler_url,
                               std::string("--node"),
                               s.node,
                               std::string("--address"),
                               s.address,
                               std::string("--listen"),
                               s.listen,
                               std::string("--state-dir"),
                               dir.str(s.node),
                               std::string("--vendor"),
                               std::string("habana"),
                               std::string("--hl-smi"),
                               fake_hl_smi_bin(),
                               std::string("--sysfs-root"),
                               dir.str("sysfs"),
                               std::string("--heartbeat-interval"),
                               std::to_string(s.heartbeat_interval_s),
                               std::string("--log-level"),
                               std::string("debug")})
    o.argv.push_back(a);
  o.env["FAKE_HL_SMI_FIXTURE"] = gaudi2_fixture();
  if (!s.mode_file.empty()) o.env["FAKE_HL_SMI_MODE_FILE"] = s.mode_file;
  o.stdout_path = dir.str("agent-" + s.node + ".out");
  o.stderr_path = dir.str("agent-" + s.node + ".log");
  std::error_code ec;
  fs::remove(o.stdout_path, ec);
  fs::create_directories(dir.str("sysfs"), ec);
  return Child(std::move(o));
}

bool wait_nodes(const Api& api, const std::vector<std::string>& names, const std::string& state,
                std::chrono::milliseconds timeout) {
  return eventually(
      [&] {
        for (const auto& n : names) {
          auto node = api.node(n);
          if (!node || node->value("state", "") != state) return false;
        }
        return true;
      },
      timeout);
}

std::string find_double_booking(const std::vector<json>& jobs) {
  std::map<std::pair<std::string, int>, std::string> holder;
  for (const auto& j : jobs) {
    std::string st = j.value("state", "");
    if (st != "assigned" && st != "running") continue;
    for (const auto& a : j.value("allocations", json::array())) {
      for (const auto& m : a.value("module_ids", json::array())) {
        auto key = std::make_pair(a.value("node", ""), m.get<int>());
        auto [it, fresh] = holder.emplace(key, j.value("id", ""));
        if (!fresh)
          return key.first + " card " + std::to_string(key.second) + " held by " + it->second + " and " +
                 j.value("id", "");
      }
    }
  }
  return "";
}

json shell_job(const std::string& script, int devices, int max_retries) {
  return {{"command", {"/bin/sh", "-c", script}}, {"devices", devices}, {"max_retries", max_retries}};
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace tessel::chaos
