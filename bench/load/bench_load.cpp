// bench_load: many simulated agents in one process against the real
// tessel-scheduler over HTTP on loopback. Not run in CI; see bench/RESULTS.md.
//
// Each simulated node registers with a fake 8-card Gaudi 2 inventory, then does
// what tessel-agent does:
//   - heartbeats every --interval seconds (default 5, the scheduler's default),
//     staggered over the interval, on one kept connection per node (TCP_NODELAY,
//     one write), without task reports (current agents send none in heartbeats);
//     --hb-new-connection opens a new one each time instead ("Connection: close",
//     what agents did before 2026-12-02), --no-nodelay turns Nagle on and writes
//     head and body separately (cpp-httplib's client did that); after the first
//     answer with an inventory_tag they carry the cards' readings and that tag, as
//     the agent does; --whole-inventory sends the whole inventory every time (what
//     agents did before 2026-12-02; a 409 makes a node send it whole once, too);
//   - every --report-every heartbeats (default 6, ~30 s; 0: never) sends a
//     POST /v1/agent/report (one exited task the scheduler never assigned: it
//     answers and acknowledges it) on a new connection, as the agent's reporter;
//   - keeps one assignments long poll open (wait_s=30) on a keep-alive
//     connection, unless --no-long-poll; a poll the scheduler sheds
//     (poll_after_ms) is sent again after that long with the agent's jitter.
// No thread per node or per connection: heartbeats and reports are driven by
// --hb-threads event loops (default 1) and every long poll by one more, all
// non-blocking sockets on epoll, so the generator stays cheap at 50,000 nodes.
//
// Loopback limits this process takes care of:
//   - open files: it raises RLIMIT_NOFILE, the hard limit too when it may (root
//     with CAP_SYS_RESOURCE),
//     to fs.nr_open; the scheduler it starts inherits that (and raises its soft
//     limit to the hard one by itself);
//   - ephemeral ports: about 28,000 per (source address, destination). A node holds
//     one for its long poll, one for its kept heartbeat connection, and each
//     connection it closed (reports; heartbeats with --hb-new-connection) holds its
//     port in TIME_WAIT for 60 s. Near a full range, connect() scans it in the kernel
//     and the generator stalls (9,000 nodes from one address: heartbeat p90 0.7-1 s,
//     p99 1.6-1.8 s; from three: 0.3 and 4.4 ms). Node i's connections leave from
//     127.0.0.(2 + i % K) (bound with IP_BIND_ADDRESS_NO_PORT so the kernel picks the
//     port per destination at connect time); K is --source-ips, by default enough
//     addresses for half of each one's ports (sources_for(); 1 below ~3,500 nodes).
//
// Phases: nodes register in id order (--reg-threads blocking clients); each starts
// heartbeating (its first within an interval) and polling as soon as its
// registration is answered, so a long registration sends no node down. Once all
// are registered, a --warmup (default one interval) is not measured, then
// --seconds are; the send path also waits for the server's close after a
// "Connection: close" answer, so the TIME_WAIT is the server's and the client
// port is free at once. For every node count it prints heartbeat latency
// percentiles (connect to the whole answer), errors, heartbeats sent more than one
// interval late (the generator fell behind), nodes the scheduler saw as down at
// the end (-1: GET /v1/inventory got no answer), the scheduler's CPU (utime+stime
// from /proc/<pid>/stat over the measured window, 100 % = one core), RSS and peak
// RSS, shed polls, reports and their p99, long-poll errors, the long polls and
// connections the scheduler holds at the end (its /metrics), and the generator's
// own CPU. Errors are listed by kind on stderr.
//
//   bench_load [--nodes 1000,5000] [--seconds 30] [--interval 5] [--warmup S]
//              [--hb-threads 1] [--reg-threads 64] [--report-every 6] [--source-ips K]
//              [--no-long-poll] [--no-nodelay] [--hb-new-connection] [--whole-inventory]
//              [--scheduler PATH] [--db URI]
//              [--scheduler-log-level warn] [--scheduler-arg ARG]...
//
// Code: load_options.hpp (flags), http_call.* (one request on an epoll-driven socket),
// sim_agents.* (the simulated agents' loops), this file (the scheduler child, one run
// per node count, the report).

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "benchkit.hpp"
#include "http_call.hpp"
#include "load_options.hpp"
#include "sim_agents.hpp"

namespace {

using json = nlohmann::json;
namespace benchkit = tessel::benchkit;
using namespace tessel::bench_load;
using benchkit::cpu_ticks;
using benchkit::ms_between;
using benchkit::raise_nofile;
using namespace std::chrono_literals;

// A tessel-scheduler child with a fresh DB; SIGTERM (then SIGKILL) on destruction.
struct Scheduler {
  explicit Scheduler(const Options& o)
      : dir("tessel-bench-load"),
        server(benchkit::scheduler_argv(o.scheduler, o.db.empty() ? dir.str("s.db") : o.db, flags(o)),
               dir.str("scheduler.out")) {}
  static std::vector<std::string> flags(const Options& o) {
    std::vector<std::string> f = {"--log-level", o.scheduler_log_level, "--heartbeat-timeout", "15"};
    f.insert(f.end(), o.scheduler_args.begin(), o.scheduler_args.end());
    return f;
  }
  benchkit::TempDir dir;
  benchkit::ServerProcess server;
};

struct Row {
  int nodes = 0;
  bool long_poll = false;
  int sources = 1;
  double register_s = 0;
  long reg_errors = 0;
  long heartbeats = 0, errors = 0, late = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  int down = 0;
  double cpu_pct = 0, rss = 0, hwm = 0, gen_cpu_pct = 0;
  long shed = 0, reports = 0, rep_errors = 0, poll_errors = 0;
  double rep_p99 = 0;
  long sched_polls = -1, sched_conns = -1;  // From /metrics at the end.
};

// The value of a metric line "NAME VALUE" in Prometheus text, or -1.
long metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::atol(line.c_str() + name.size() + 1);
  return -1;
}

Row run(const Options& o, int n) {
  Row row;
  row.nodes = n;
  row.long_poll = o.long_poll;
  Scheduler s(o);
  if (s.server.port() <= 0) {
    std::fprintf(stderr, "bench_load: scheduler did not start\n");
    return row;
  }
  Plan p;
  p.n = n;
  p.port = s.server.port();
  p.o = &o;
  p.src.count = o.source_ips > 0 ? o.source_ips : sources_for(o, n);
  row.sources = p.src.count;
  p.interval = std::chrono::duration<double>(o.interval);
  p.inventory = inventory().dump();
  ErrorKinds kinds;

  p.readings = readings().dump();
  p.registered = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p.registered[static_cast<size_t>(i)] = 0;
  p.tags = std::make_unique<int64_t[]>(static_cast<size_t>(n));  // Written before `registered`.

  // The loops start first and pick nodes up as their registrations are answered.
  std::atomic<bool> stop{false};
  PollStats polls;
  std::thread pollers;
  if (o.long_poll) pollers = std::thread([&] { poll_loop(p, stop, polls); });
  std::vector<HbResult> results(static_cast<size_t>(o.hb_threads));
  std::vector<std::thread> hb_threads;
  for (int t = 0; t < o.hb_threads; ++t)
    hb_threads.emplace_back([&, t] { results[static_cast<size_t>(t)] = heartbeat_loop(p, t, o.hb_threads); });

  // Register all nodes, in id order (reg_threads keep-alive clients in parallel).
  auto t0 = Clock::now();
  std::atomic<int> next{0};
  std::atomic<long> reg_errors{0};
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < o.reg_threads; ++t)
      ts.emplace_back([&] {
        httplib::Client c("127.0.0.1", s.server.port());
        c.set_connection_timeout(5, 0);
        c.set_read_timeout(30, 0);
        c.set_tcp_nodelay(true);
        std::map<std::string, long> mine;
        for (int i; (i = next++) < n;) {
          std::string body =
              "{\"node\":\"" + node_name(i) +
              "\",\"address\":\"10.1.0.1\",\"agent_port\":7451,\"tasks\":[],\"inventory\":" + p.inventory + "}";
          auto r = c.Post("/v1/agent/register", body, "application/json");
          const bool ok = r && r->status == 200;
          if (ok) p.tags[static_cast<size_t>(i)] = inventory_tag_of(r->body);
          p.registered[static_cast<size_t>(i)] = ok ? 1 : 2;
          if (!ok) {
            ++reg_errors;
            ++mine["register: " + (r ? "status " + std::to_string(r->status) : httplib::to_string(r.error()))];
          }
        }
        kinds.add(mine);
      });
    for (auto& t : ts) t.join();
  }
  row.register_s = std::chrono::duration<double>(Clock::now() - t0).count();
  row.reg_errors = reg_errors;

  // The measured window: after a warm-up (by default one interval: every node has
  // heartbeated and polled once since registering), for --seconds.
  const double warmup = o.warmup >= 0 ? o.warmup : o.interval;
  const auto measure_from =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  p.measure_from_t = measure_from.time_since_epoch().count();
  p.end_t = end.time_since_epoch().count();
  std::this_thread::sleep_until(measure_from);
  const long ticks0 = cpu_ticks(s.server.pid()), self0 = cpu_ticks(::getpid());
  polls.shed = 0;  // Count from the measured window on.
  polls.answered = 0;
  polls.errors = 0;
  for (auto& t : hb_threads) t.join();
  const auto measured_end = Clock::now();
  const double wall = std::chrono::duration<double>(measured_end - measure_from).count();
  const long ticks1 = cpu_ticks(s.server.pid()), self1 = cpu_ticks(::getpid());
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  row.cpu_pct = 100.0 * static_cast<double>(ticks1 - ticks0) / hz / wall;
  row.gen_cpu_pct = 100.0 * static_cast<double>(self1 - self0) / hz / wall;
  row.rss = benchkit::status_field(s.server.pid(), "VmRSS", true);
  row.hwm = benchkit::status_field(s.server.pid(), "VmHWM", true);
  {
    httplib::Client c("127.0.0.1", s.server.port());
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/v1/inventory");
    if (r && r->status == 200) {
      auto j = json::parse(r->body, nullptr, false);
      if (j.is_object()) row.down = j["nodes"].value("down", 0);
    } else {
      row.down = -1;  // The scheduler did not answer.
    }
    if (auto m = c.Get("/metrics"); m && m->status == 200) {
      row.sched_polls = metric(m->body, "tessel_agent_long_polls");
      row.sched_conns = metric(m->body, "tessel_http_connections");
    }
  }
  stop = true;
  if (pollers.joinable()) pollers.join();
  std::vector<double> lat, rep;
  for (auto& r : results) {
    lat.insert(lat.end(), r.hb_ms.begin(), r.hb_ms.end());
    rep.insert(rep.end(), r.rep_ms.begin(), r.rep_ms.end());
    row.errors += r.hb_errors;
    row.late += r.late;
    row.reports += r.reports;
    row.rep_errors += r.rep_errors;
    kinds.add(r.kinds);
  }
  kinds.add(polls.kinds);
  row.shed = polls.shed;
  row.poll_errors = polls.errors;
  row.heartbeats = static_cast<long>(lat.size());
  row.p50 = benchkit::percentile(lat, 50);
  row.p90 = benchkit::percentile(lat, 90);
  row.p99 = benchkit::percentile(lat, 99);
  row.max = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  row.rep_p99 = benchkit::percentile(rep, 99);
  if (row.reg_errors || row.register_s > 10)
    std::fprintf(stderr, "bench_load: %d nodes: registration took %.1f s, %ld failed\n", n, row.register_s,
                 row.reg_errors);
  for (auto& [k, v] : kinds.counts) std::fprintf(stderr, "bench_load: %d nodes: %ld x %s\n", n, v, k.c_str());
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
  const char* usage =
      "usage: bench_load [--nodes 1000,5000] [--seconds 30] [--interval 5] [--warmup S] [--hb-threads 1] "
      "[--reg-threads 64] [--report-every 6] [--source-ips K] [--no-long-poll] [--no-nodelay] [--hb-new-connection] "
      "[--whole-inventory] [--scheduler PATH] [--db URI] [--scheduler-log-level warn] [--scheduler-arg ARG]...\n";
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
      o.interval = std::max(0.1, std::atof(val().c_str()));
    else if (a == "--warmup")
      o.warmup = std::atof(val().c_str());
    else if (a == "--hb-threads")
      o.hb_threads = std::clamp(std::atoi(val().c_str()), 1, 64);
    else if (a == "--reg-threads")
      o.reg_threads = std::clamp(std::atoi(val().c_str()), 1, 1024);
    else if (a == "--report-every")
      o.report_every = std::max(0, std::atoi(val().c_str()));
    else if (a == "--source-ips")
      o.source_ips = std::clamp(std::atoi(val().c_str()), 0, 250);
    else if (a == "--no-long-poll")
      o.long_poll = false;
    else if (a == "--nodelay")  // The default; accepted for older command lines.
      o.nodelay = true;
    else if (a == "--no-nodelay")
      o.nodelay = false;
    else if (a == "--hb-keep-alive")  // The default; accepted for older command lines.
      o.hb_keep_alive = true;
    else if (a == "--hb-new-connection")
      o.hb_keep_alive = false;
    else if (a == "--whole-inventory")
      o.readings = false;
    else if (a == "--scheduler")
      o.scheduler = val();
    else if (a == "--db")
      o.db = val();
    else if (a == "--scheduler-log-level")
      o.scheduler_log_level = val();
    else if (a == "--scheduler-arg")
      o.scheduler_args.push_back(val());
    else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  if (o.seconds <= 0 || o.seconds > 3600 || o.nodes.empty()) {
    std::fputs(usage, stderr);
    return 2;
  }
  if (!o.db.empty() && o.nodes.size() > 1) {
    std::fputs("bench_load: --db takes one node count (--nodes N): every run would share the database\n", stderr);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  // Per simulated node a socket for its long poll and one for its heartbeats (or
  // only those in flight, --hb-new-connection), here and in the scheduler, which
  // inherits this limit.
  const rlim_t nofile = raise_nofile();
  const int most = *std::max_element(o.nodes.begin(), o.nodes.end());
  const rlim_t per_node = (o.long_poll ? 1 : 0) + (o.hb_keep_alive ? 1 : 0);
  if (nofile < static_cast<rlim_t>(most) * per_node + 2048)
    std::fprintf(stderr, "bench_load: open file limit %lu is short for %d nodes (run as root, or raise it)\n",
                 static_cast<unsigned long>(nofile), most);
  std::printf("%7s %5s %3s %7s %4s %9s %6s %7s %7s %7s %8s %5s %5s %6s %7s %7s %6s %6s %7s %7s %6s %6s %7s %5s\n",
              "nodes", "poll", "ips", "reg_s", "rerr", "heartbeats", "errors", "p50_ms", "p90_ms", "p99_ms", "max_ms",
              "late", "down", "cpu_%", "rss_mib", "peak_mib", "shed", "perr", "reports", "rp99_ms", "rerrs", "polls",
              "conns", "gen_%");
  for (int n : o.nodes) {
    Row r = run(o, n);
    std::printf(
        "%7d %5s %3d %7.2f %4ld %9ld %6ld %7.2f %7.2f %7.2f %8.1f %5ld %5d %6.1f %7.1f %7.1f %6ld %6ld %7ld %7.2f "
        "%6ld %6ld %7ld %5.0f\n",
        r.nodes, r.long_poll ? "yes" : "no", r.sources, r.register_s, r.reg_errors, r.heartbeats, r.errors, r.p50,
        r.p90, r.p99, r.max, r.late, r.down, r.cpu_pct, r.rss, r.hwm, r.shed, r.poll_errors, r.reports, r.rep_p99,
        r.rep_errors, r.sched_polls, r.sched_conns, r.gen_cpu_pct);
    std::fflush(stdout);
  }
  return 0;
}
