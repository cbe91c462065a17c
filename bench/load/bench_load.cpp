// bench_load: many simulated agents in one process against the real
// tessel-scheduler over HTTP on loopback. Not run in CI; see bench/RESULTS.md.
//
// Each simulated node registers with a fake 8-card Gaudi 2 inventory, then
// heartbeats every --interval seconds (default 5, the scheduler's default),
// staggered; with --long-poll (default on) it also keeps one assignments long
// poll open per node the way a real agent's poller does (all driven by one epoll
// thread here, so the generator stays cheap at 5,000 nodes). A poll the scheduler
// sheds (poll_after_ms: it holds as many as its threads allow) is sent again
// after that long with the agent's jitter; the `shed` column counts them.
// Heartbeats are sent by a pool of --hb-threads workers over one client per
// node, as tessel-agent sends them: TCP_NODELAY on, a new connection for each
// heartbeat (--hb-keep-alive keeps it open instead, as agents did up
// to the commit that added this flag; --no-nodelay turns Nagle back on), 10 s read timeout (a timeout counts
// as an error). For every node count it prints heartbeat latency
// percentiles, errors, nodes the scheduler saw as down, and the scheduler's CPU
// (utime+stime from /proc/<pid>/stat over the measured window) and RSS.
//
//   bench_load [--nodes 1000,5000] [--seconds 30] [--interval 5] [--hb-threads 64]
//              [--no-long-poll] [--no-nodelay] [--hb-keep-alive] [--scheduler PATH]
//              [--scheduler-arg ARG]...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  std::vector<int> nodes = {1000, 5000};
  double seconds = 30;
  double interval = 5;
  int hb_threads = 64;
  bool long_poll = true;
  bool nodelay = true;         // TCP_NODELAY on heartbeat connections (the agent sets it).
  bool hb_keep_alive = false;  // Keep heartbeat connections open (the agent does not).
  std::string scheduler = TESSEL_SCHEDULER_BIN;
  std::vector<std::string> scheduler_args;  // --scheduler-arg, repeated.
};

// A tessel-scheduler child with a fresh DB; SIGTERM on destruction.
struct Scheduler {
  pid_t pid = -1;
  int port = 0;
  std::filesystem::path dir;
  explicit Scheduler(const Options& o) {
    dir = std::filesystem::temp_directory_path() / ("tessel-bench-load-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::string db = (dir / "s.db").string();
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // Dies with the benchmark.
      dup2(fds[1], 1);
      close(fds[0]);
      std::vector<std::string> args = {o.scheduler,   "--listen", "127.0.0.1:0",         "--db", db,
                                       "--log-level", "error",    "--heartbeat-timeout", "15"};
      args.insert(args.end(), o.scheduler_args.begin(), o.scheduler_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(o.scheduler.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    FILE* f = fdopen(fds[0], "r");
    char line[256];
    if (fgets(line, sizeof line, f)) {
      std::string l(line);
      port = std::atoi(l.c_str() + l.rfind(':') + 1);
    }
  }
  ~Scheduler() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(dir);
  }
};

// utime+stime in clock ticks, from /proc/<pid>/stat.
long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atol(field.c_str());
    if (i == 15) stime = std::atol(field.c_str());
  }
  return utime + stime;
}

// VmRSS / VmHWM in MiB from /proc/<pid>/status.
double status_mib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) / 1024.0;
  return 0;
}

json inventory() {
  json devs = json::array();
  const int module_of_index[8] = {2, 0, 3, 1, 6, 4, 7, 5};
  for (int i = 0; i < 8; ++i)
    devs.push_back({{"index", i},
                    {"module_id", module_of_index[i]},
                    {"bus_id", "0000:" + std::to_string(16 + i) + ":00.0"},
                    {"model", "HL-225"},
                    {"serial", "AN0000" + std::to_string(i)},
                    {"uuid", "01P" + std::to_string(i)},
                    {"memory_total_mib", 98304},
                    {"memory_used_mib", 672},
                    {"utilization_pct", 0},
                    {"temperature_c", 30 + i},
                    {"power_w", 200},
                    {"healthy", true}});
  return {{"vendor", "habana"}, {"driver_version", "1.18.0"}, {"devices", devs}};
}

std::string node_name(int i) {
  char b[32];
  std::snprintf(b, sizeof b, "sim-%05d", i);
  return b;
}

double pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// ---- Long polls on raw sockets (one epoll thread for every node) ------------

std::atomic<long> g_polls_shed{0};  // Polls answered with poll_after_ms.

struct Poll {
  int node = 0;
  int fd = -1;
  long version = 0;
  std::string in;  // Bytes of the response read so far.
  Clock::time_point retry_at{};
};

bool send_poll(Poll& p, int port, int ep) {
  if (p.fd < 0) {
    p.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p.fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(p.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) return false;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = static_cast<uint32_t>(p.node);
    ::epoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &ev);
  }
  // connect() on loopback completes at once; a blocking-style write of a small request is fine.
  const std::string req = "GET /v1/agent/nodes/" + node_name(p.node) +
                          "/assignments?wait_s=30&version=" + std::to_string(p.version) +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
  p.in.clear();
  for (size_t off = 0; off < req.size();) {
    ssize_t w = ::send(p.fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (w > 0) {
      off += static_cast<size_t>(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EINPROGRESS)) {
      pollfd pf{p.fd, POLLOUT, 0};
      ::poll(&pf, 1, 1000);
    } else {
      return false;
    }
  }
  return true;
}

void close_poll(Poll& p, int ep, bool error) {
  if (p.fd >= 0) {
    ::epoll_ctl(ep, EPOLL_CTL_DEL, p.fd, nullptr);
    ::close(p.fd);
  }
  p.fd = -1;
  p.in.clear();
  p.retry_at = Clock::now() + (error ? 1s : 0s);  // Back off like an agent on errors only.
}

// Reads what is there; on a whole response, takes its version and sends the next poll.
void on_readable(Poll& p, int port, int ep) {
  char buf[16384];
  for (;;) {
    ssize_t r = ::recv(p.fd, buf, sizeof buf, 0);
    if (r > 0) {
      p.in.append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_poll(p, ep, !p.in.empty() || r < 0);  // EOF between responses: the server's keep-alive limit.
    return;
  }
  auto head_end = p.in.find("\r\n\r\n");
  if (head_end == std::string::npos) return;
  std::string head = p.in.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto cl = head.find("content-length:");
  if (cl == std::string::npos) return close_poll(p, ep, true);
  size_t len = std::strtoul(head.c_str() + cl + 15, nullptr, 10);
  if (p.in.size() < head_end + 4 + len) return;
  const bool ok = head.rfind("http/1.1 200", 0) == 0;
  int poll_after_ms = 0;
  if (ok) {
    auto j = json::parse(p.in.substr(head_end + 4, len), nullptr, false);
    if (j.is_object()) {
      p.version = j.value("version", p.version);
      poll_after_ms = j.value("poll_after_ms", 0);
    }
  }
  if (poll_after_ms > 0) {  // Shed: come back later, with the agent's 0.75..1.25x jitter.
    ++g_polls_shed;
    close_poll(p, ep, false);
    p.retry_at = Clock::now() + std::chrono::milliseconds(poll_after_ms * (75 + p.node * 7919 % 51) / 100);
    return;
  }
  const bool server_closes = head.find("connection: close") != std::string::npos;
  if (!ok || server_closes) return close_poll(p, ep, !ok);
  if (!send_poll(p, port, ep)) close_poll(p, ep, true);
}

void poll_loop(int port, int n, const std::atomic<bool>& stop) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<Poll> polls(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) polls[static_cast<size_t>(i)].node = i;
  std::vector<epoll_event> events(1024);
  while (!stop) {
    const auto now = Clock::now();
    for (auto& p : polls)
      if (p.fd < 0 && p.retry_at <= now && !send_poll(p, port, ep)) close_poll(p, ep, true);
    int k = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int e = 0; e < k; ++e) {
      Poll& p = polls[events[static_cast<size_t>(e)].data.u32];
      if (p.fd >= 0) on_readable(p, port, ep);
    }
  }
  for (auto& p : polls)
    if (p.fd >= 0) ::close(p.fd);
  ::close(ep);
}

struct Row {
  int nodes = 0;
  bool long_poll = false;
  double register_s = 0;
  long heartbeats = 0, errors = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, late = 0;
  int down = 0;
  double cpu_pct = 0, rss = 0, hwm = 0;
  long shed = 0;  // Long polls told to come back later (poll_after_ms).
};

Row run(const Options& o, int n, bool long_poll) {
  Row row;
  row.nodes = n;
  row.long_poll = long_poll;
  Scheduler s(o);
  if (s.port <= 0) {
    std::fprintf(stderr, "bench_load: scheduler did not start\n");
    return row;
  }
  const json inv = inventory();
  std::atomic<bool> stop{false};

  // Register all nodes (hb_threads in parallel).
  auto t0 = Clock::now();
  std::atomic<int> next{0}, reg_errors{0};
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < o.hb_threads; ++t)
      ts.emplace_back([&] {
        httplib::Client c("127.0.0.1", s.port);
        c.set_connection_timeout(5, 0);
        c.set_read_timeout(10, 0);
        for (int i; (i = next++) < n;) {
          json body = {{"node", node_name(i)},
                       {"address", "10.1.0.1"},
                       {"agent_port", 7451},
                       {"inventory", inv},
                       {"tasks", json::array()}};
          auto r = c.Post("/v1/agent/register", body.dump(), "application/json");
          if (!r || r->status != 200) ++reg_errors;
        }
      });
    for (auto& t : ts) t.join();
  }
  row.register_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (reg_errors) std::fprintf(stderr, "bench_load: %d registrations failed\n", reg_errors.load());

  // Long polls: one open assignments request per node, like the agents' pollers, all
  // driven by one epoll thread here so the generator itself stays cheap at 5,000 nodes
  // (a thread per poll made the generator, not the scheduler, fall behind).
  std::thread pollers;
  if (long_poll) pollers = std::thread([&] { poll_loop(s.port, n, stop); });

  // Heartbeats: node i is due at start + (i / n) * interval + k * interval.
  const auto interval = std::chrono::duration<double>(o.interval);
  const auto start = Clock::now() + 1s;
  const auto measure_from = start;
  const auto end = measure_from + std::chrono::duration<double>(o.seconds);
  std::mutex mu;
  std::vector<double> lat;
  std::atomic<long> errors{0}, late{0};
  long ticks0 = 0;
  std::thread sampler([&] {
    std::this_thread::sleep_until(measure_from);
    ticks0 = cpu_ticks(s.pid);
  });
  // One keep-alive connection per node, as each real agent has its own; node i
  // belongs to worker i % hb_threads only.
  std::vector<std::unique_ptr<httplib::Client>> conns;
  for (int i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<httplib::Client>("127.0.0.1", s.port));
    conns.back()->set_keep_alive(o.hb_keep_alive);
    conns.back()->set_connection_timeout(2, 0);
    conns.back()->set_read_timeout(10, 0);
    conns.back()->set_tcp_nodelay(o.nodelay);
  }
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < o.hb_threads; ++t)
      ts.emplace_back([&, t] {
        std::vector<double> mine;
        // This worker owns nodes t, t+T, t+2T, ...; visits them in due order.
        for (long k = 0;; ++k) {
          bool done = false;
          for (int i = t; i < n; i += o.hb_threads) {
            auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   interval * (static_cast<double>(i) / n + static_cast<double>(k)));
            if (due >= end || Clock::now() >= end) {
              done = true;
              break;
            }
            std::this_thread::sleep_until(due);
            const bool measured = true;  // Every round counts: a stuck first round is the finding.
            if (measured && Clock::now() - due > interval) ++late;  // This worker fell behind.
            json body = {{"node", node_name(i)}, {"inventory", inv}, {"tasks", json::array()}};
            auto a = Clock::now();
            auto r = conns[static_cast<size_t>(i)]->Post("/v1/agent/heartbeat", body.dump(), "application/json");
            double ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
            if (!measured) continue;
            if (!r || r->status != 200)
              ++errors;
            else
              mine.push_back(ms);
          }
          if (done || t >= n || Clock::now() >= end) break;
        }
        std::lock_guard lk(mu);
        lat.insert(lat.end(), mine.begin(), mine.end());
      });
    for (auto& t : ts) t.join();
  }
  sampler.join();
  const double wall = std::chrono::duration<double>(Clock::now() - measure_from).count();
  const long ticks1 = cpu_ticks(s.pid);
  row.cpu_pct = 100.0 * static_cast<double>(ticks1 - ticks0) / static_cast<double>(sysconf(_SC_CLK_TCK)) / wall;
  row.rss = status_mib(s.pid, "VmRSS");
  row.hwm = status_mib(s.pid, "VmHWM");
  {
    httplib::Client c("127.0.0.1", s.port);
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/v1/inventory");
    if (r && r->status == 200) {
      auto j = json::parse(r->body, nullptr, false);
      if (j.is_object()) row.down = j["nodes"].value("down", 0);
    } else {
      row.down = -1;  // The scheduler did not answer.
    }
  }
  row.shed = g_polls_shed.exchange(0);
  row.heartbeats = static_cast<long>(lat.size());
  row.errors = errors;
  row.late = static_cast<double>(late);
  row.p50 = pct(lat, 50);
  row.p90 = pct(lat, 90);
  row.p99 = pct(lat, 99);
  row.max = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  stop = true;
  kill(s.pid, SIGTERM);
  if (pollers.joinable()) pollers.join();
  return row;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_load: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--nodes")
      o.nodes = parse_list(val());
    else if (a == "--seconds")
      o.seconds = std::atof(val().c_str());
    else if (a == "--interval")
      o.interval = std::atof(val().c_str());
    else if (a == "--hb-threads")
      o.hb_threads = std::max(1, std::atoi(val().c_str()));
    else if (a == "--no-long-poll")
      o.long_poll = false;
    else if (a == "--nodelay")  // The default; accepted for older command lines.
      o.nodelay = true;
    else if (a == "--no-nodelay")
      o.nodelay = false;
    else if (a == "--hb-keep-alive")
      o.hb_keep_alive = true;
    else if (a == "--scheduler")
      o.scheduler = val();
    else if (a == "--scheduler-arg")
      o.scheduler_args.push_back(val());
    else {
      std::fprintf(stderr,
                   "usage: bench_load [--nodes 1000,5000] [--seconds 30] [--interval 5] [--hb-threads 64] "
                   "[--no-long-poll] [--no-nodelay] [--hb-keep-alive] [--scheduler PATH] [--scheduler-arg ARG]...\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  // Two sockets per simulated node (heartbeat pool aside): raise the fd limit
  // for this process and the scheduler it starts.
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);
  std::printf("%7s %5s %8s %9s %6s %8s %8s %8s %8s %6s %5s %7s %8s %8s %8s\n", "nodes", "poll", "reg_s", "heartbeats",
              "errors", "p50_ms", "p90_ms", "p99_ms", "max_ms", "late", "down", "cpu_%", "rss_mib", "peak_mib", "shed");
  for (int n : o.nodes) {
    Row r = run(o, n, o.long_poll);
    std::printf("%7d %5s %8.2f %9ld %6ld %8.2f %8.2f %8.2f %8.1f %6.0f %5d %7.1f %8.1f %8.1f %8ld\n", r.nodes,
                r.long_poll ? "yes" : "no", r.register_s, r.heartbeats, r.errors, r.p50, r.p90, r.p99, r.max, r.late,
                r.down, r.cpu_pct, r.rss, r.hwm, r.shed);
    std::fflush(stdout);
  }
  return 0;
}
