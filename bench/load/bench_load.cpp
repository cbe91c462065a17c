// bench_load: many simulated agents in one process against the real
// tessel-scheduler over HTTP on loopback. Not run in CI; see bench/RESULTS.md.
//
// Each simulated node registers with a fake 8-card Gaudi 2 inventory, then does
// what tessel-agent does:
//   - heartbeats every --interval seconds (default 5, the scheduler's default),
//     staggered over the interval, on a new connection each (TCP_NODELAY, one
//     write, "Connection: close"), without task reports (current agents send
//     none in heartbeats); --hb-keep-alive keeps one connection per node open
//     instead, --no-nodelay turns Nagle on and writes head and body separately
//     (cpp-httplib's client did that);
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
//   - ephemeral ports: about 28,000 per (source address, destination), and every
//     node holds one for its long poll. Node i's connections leave from
//     127.0.0.(2 + i % K) (bound with IP_BIND_ADDRESS_NO_PORT so the kernel picks the
//     port per destination at connect time); K is --source-ips, by default one
//     address per 10,000 nodes (1,000 nodes: plain 127.0.0.1).
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
//              [--no-long-poll] [--no-nodelay] [--hb-keep-alive] [--scheduler PATH]
//              [--scheduler-log-level warn] [--scheduler-arg ARG]...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "benchkit.hpp"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

namespace {

using json = nlohmann::json;
namespace benchkit = tessel::benchkit;
using benchkit::Clock;
using benchkit::cpu_ticks;
using benchkit::ms_between;
using benchkit::raise_nofile;
using namespace std::chrono_literals;

struct Options {
  std::vector<int> nodes = {1000, 5000};
  double seconds = 30;
  double interval = 5;
  double warmup = -1;  // < 0: one interval.
  int hb_threads = 1;
  int reg_threads = 64;
  int report_every = 6;  // Heartbeats per report; 0: no reports.
  int source_ips = 0;    // 0: one per 10,000 nodes.
  bool long_poll = true;
  bool nodelay = true;         // TCP_NODELAY and one write per request (the agent does both).
  bool hb_keep_alive = false;  // Keep heartbeat connections open (the agent does not).
  std::string scheduler = TESSEL_SCHEDULER_BIN;
  std::string scheduler_log_level = "warn";
  std::vector<std::string> scheduler_args;  // --scheduler-arg, repeated.
};

constexpr int kPollWaitS = 30;
constexpr auto kReadTimeout = 10s;  // The agent's read timeout for a heartbeat or a report.

// A tessel-scheduler child with a fresh DB; SIGTERM (then SIGKILL) on destruction.
struct Scheduler {
  explicit Scheduler(const Options& o)
      : dir("tessel-bench-load"),
        server(benchkit::scheduler_argv(o.scheduler, dir.str("s.db"), flags(o)), dir.str("scheduler.out")) {}
  static std::vector<std::string> flags(const Options& o) {
    std::vector<std::string> f = {"--log-level", o.scheduler_log_level, "--heartbeat-timeout", "15"};
    f.insert(f.end(), o.scheduler_args.begin(), o.scheduler_args.end());
    return f;
  }
  benchkit::TempDir dir;
  benchkit::ServerProcess server;
};

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

// ---- One HTTP exchange on a non-blocking socket -------------------------------

// The source address of node i's connections (network order); INADDR_ANY: do not bind.
struct Sources {
  int count = 1;
  uint32_t of(int node) const {
    if (count <= 1) return htonl(INADDR_ANY);
    return htonl((127u << 24) | static_cast<uint32_t>(2 + node % count));
  }
};

// A connection slot: connect, write one request, read one response; with
// keep-alive the socket stays for the next request. Edge-triggered epoll: every
// event drives the state machine as far as it goes.
struct Call {
  // idle: kept open for the next request; draining: answered, waiting for the server's
  // close so that the server, not this port, holds the TIME_WAIT.
  enum State : uint8_t { closed, connecting, writing, reading, idle, draining } state = closed;
  int fd = -1;
  std::string out;  // The request.
  size_t off = 0;
  size_t split = 0;  // > 0: write out[0, split) and the rest in two send()s (Nagle's case).
  std::string in;
  Clock::time_point t0{}, deadline{};
  uint64_t tag = 0;                // Its epoll tag: which node and kind.
  size_t inflight_pos = SIZE_MAX;  // Index in the loop's in-flight list.
};

// Opens fd for `c` (closed) and starts connecting. Returns an errno-ish message on failure.
std::string open_call(Call& c, int ep, uint64_t tag, uint32_t src, int port, bool nodelay) {
  c.tag = tag;
  c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) return std::string("socket: ") + std::strerror(errno);
  if (nodelay) {
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (src != htonl(INADDR_ANY)) {
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in b{};
    b.sin_family = AF_INET;
    b.sin_addr.s_addr = src;
    if (::bind(c.fd, reinterpret_cast<sockaddr*>(&b), sizeof b) != 0) {
      std::string e = std::string("bind: ") + std::strerror(errno);
      ::close(c.fd);
      c.fd = -1;
      return e;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    std::string e = std::string("connect: ") + std::strerror(errno);
    ::close(c.fd);
    c.fd = -1;
    return e;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = tag;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  c.state = Call::connecting;
  return "";
}

void close_call(Call& c) {
  if (c.fd >= 0) ::close(c.fd);  // Closing removes it from the epoll set.
  c.fd = -1;
  c.state = Call::closed;
  c.in.clear();
}

struct Response {
  int status = 0;
  bool server_closes = false;  // "Connection: close", or it closed already.
  bool eof = false;            // It closed already.
  std::string body;
};

// 1: a whole response in c.in (taken out), 0: need more, -1: malformed.
int take_response(Call& c, Response& r) {
  auto head_end = c.in.find("\r\n\r\n");
  if (head_end == std::string::npos) return c.in.size() > 65536 ? -1 : 0;
  std::string head = c.in.substr(0, head_end);
  for (auto& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto cl = head.find("content-length:");
  if (cl == std::string::npos || head.rfind("http/1.", 0) != 0) return -1;
  size_t len = std::strtoul(head.c_str() + cl + 15, nullptr, 10);
  if (c.in.size() < head_end + 4 + len) return 0;
  r.status = std::atoi(head.c_str() + 9);
  r.server_closes = head.find("connection: close") != std::string::npos;
  r.body = c.in.substr(head_end + 4, len);
  c.in.erase(0, head_end + 4 + len);
  return 1;
}

// Drives `c` after an event (or right after open/new request). Returns:
//   0 still going, 1 response complete (in r), -1 failed (err says why; fd closed).
int drive(Call& c, Response& r, std::string& err) {
  if (c.state == Call::connecting) {
    int so = 0;
    socklen_t len = sizeof so;
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &so, &len);
    if (so != 0) {
      err = std::string("connect: ") + std::strerror(so);
      close_call(c);
      return -1;
    }
    // Still connecting: no error yet and not writable. send() below answers EAGAIN then.
    c.state = Call::writing;
  }
  if (c.state == Call::writing) {
    while (c.off < c.out.size()) {
      size_t end = (c.split > 0 && c.off < c.split) ? c.split : c.out.size();
      ssize_t w = ::send(c.fd, c.out.data() + c.off, end - c.off, MSG_NOSIGNAL);
      if (w > 0) {
        c.off += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)) return 0;
      err = std::string("send: ") + std::strerror(errno);
      close_call(c);
      return -1;
    }
    c.state = Call::reading;
  }
  if (c.state == Call::reading || c.state == Call::idle || c.state == Call::draining) {
    const bool waiting = c.state != Call::reading;
    char buf[16384];
    bool eof = false;
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && waiting) {
        close_call(c);
        return 0;
      }
      if (n < 0) {
        err = std::string("recv: ") + std::strerror(errno);
        close_call(c);
        return -1;
      }
      eof = true;
      break;
    }
    if (c.state == Call::idle) {
      // Between requests: the server closed the idle connection (or sent junk).
      if (eof || !c.in.empty()) close_call(c);
      return 0;
    }
    if (c.state == Call::draining) {
      if (eof) close_call(c);
      return 0;
    }
    int got = take_response(c, r);
    if (got == 1) {
      r.eof = eof && c.in.empty();
      if (eof) r.server_closes = true;
      return 1;
    }
    if (got < 0 || eof) {
      err = got < 0 ? "malformed response" : (c.in.empty() ? "closed before answering" : "closed mid-answer");
      close_call(c);
      return -1;
    }
  }
  return 0;
}

std::string post_request(const std::string& path, int port, const std::string& body, bool keep_alive, size_t* split) {
  std::string head = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                     (keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  if (split) *split = head.size();
  return head + body;
}

// In-flight calls of one loop, for read timeouts.
struct Inflight {
  std::vector<Call*> calls;
  void add(Call* c) {
    if (c->inflight_pos != SIZE_MAX) return;
    c->inflight_pos = calls.size();
    calls.push_back(c);
  }
  void remove(Call* c) {
    if (c->inflight_pos == SIZE_MAX) return;
    Call* last = calls.back();
    calls[c->inflight_pos] = last;
    last->inflight_pos = c->inflight_pos;
    calls.pop_back();
    c->inflight_pos = SIZE_MAX;
  }
};

// Errors by kind ("heartbeat: connect: Connection refused" -> count).
struct ErrorKinds {
  std::mutex mu;
  std::map<std::string, long> counts;
  void add(const std::map<std::string, long>& m) {
    std::lock_guard lk(mu);
    for (auto& [k, v] : m) counts[k] += v;
  }
};

// ---- Heartbeats and reports ---------------------------------------------------

// What the loops share. Registration runs beside them: a node heartbeats and polls
// from the moment its registration is answered, like an agent; the measured window
// (set once every node is registered) starts a warm-up after that.
struct Plan {
  int n = 0;
  int port = 0;
  Sources src;
  std::chrono::duration<double> interval{5.0};
  const Options* o = nullptr;
  std::string inventory;                               // Serialized once.
  std::unique_ptr<std::atomic<uint8_t>[]> registered;  // Per node: 0 not yet, 1 registered, 2 failed.
  std::atomic<Clock::rep> measure_from_t{std::numeric_limits<Clock::rep>::max()};
  std::atomic<Clock::rep> end_t{std::numeric_limits<Clock::rep>::max()};
  Clock::time_point measure_from() const { return Clock::time_point(Clock::duration(measure_from_t.load())); }
  Clock::time_point end() const { return Clock::time_point(Clock::duration(end_t.load())); }
  bool ended() const { return Clock::now() >= end(); }
};

// Spreads node i's heartbeats over the interval (independent of registration order).
double phase(int i) { return static_cast<double>(static_cast<uint32_t>(i) * 2654435761u % 1000u) / 1000.0; }

struct HbResult {
  std::vector<double> hb_ms, rep_ms;
  long hb_errors = 0, rep_errors = 0, late = 0, reports = 0;
  std::map<std::string, long> kinds;
};

// Heartbeats (and reports) of nodes t, t+T, t+2T, ... on one epoll loop.
HbResult heartbeat_loop(const Plan& p, int t, int threads) {
  HbResult res;
  const Options& o = *p.o;
  struct Node {
    int id = 0;
    Call hb, rep;
    Clock::time_point due{};   // The heartbeat's due time.
    bool hb_measured = false;  // The heartbeat in flight counts.
    bool rep_measured = false;
    long round = 0;
  };
  std::vector<Node> nodes;
  for (int i = t; i < p.n; i += threads) nodes.emplace_back().id = i;
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  Inflight inflight;
  using Due = std::pair<Clock::time_point, uint32_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> queue;
  // Nodes are registered in id order (a few dozen at a time): follow with a cursor
  // and give each its first heartbeat within an interval of its registration.
  uint32_t cursor = 0;
  auto take_registered = [&] {
    const auto now = Clock::now();
    for (; cursor < nodes.size(); ++cursor) {
      Node& nd = nodes[cursor];
      const uint8_t r = p.registered[static_cast<size_t>(nd.id)].load();
      if (r == 0) break;
      if (r != 1) continue;  // Its registration failed: it stays out.
      nd.due = now + std::chrono::duration_cast<Clock::duration>(p.interval * phase(nd.id));
      queue.push({nd.due, cursor});
    }
  };
  // Starts a request on `c` (a new connection unless it idles on a kept one).
  // Returns drive()'s answer: the response may be complete at once.
  auto start_call = [&](Node& nd, Call& c, uint64_t tag, const std::string& path, const std::string& body,
                        bool keep_alive, Response& r, std::string& err) -> int {
    c.out = post_request(path, p.port, body, keep_alive, o.nodelay ? nullptr : &c.split);
    if (o.nodelay) c.split = 0;
    c.off = 0;
    c.t0 = Clock::now();
    c.deadline = c.t0 + kReadTimeout;
    if (c.state == Call::idle) {
      c.state = Call::writing;
    } else {
      if (c.state != Call::closed) close_call(c);
      err = open_call(c, ep, tag, p.src.of(nd.id), p.port, o.nodelay);
      if (!err.empty()) return -1;
    }
    inflight.add(&c);
    return drive(c, r, err);
  };
  std::function<void(uint32_t, bool, int, const Response&, const std::string&)> on_done;
  const std::string hb_prefix = "{\"node\":\"", hb_mid = "\",\"inventory\":";
  auto send_heartbeat = [&](uint32_t k) {
    Node& nd = nodes[k];
    const auto now = Clock::now();
    nd.hb_measured = nd.due >= p.measure_from();
    if (nd.hb_measured && now - nd.due > p.interval) ++res.late;  // This loop fell behind.
    const std::string body = hb_prefix + node_name(nd.id) + hb_mid + p.inventory + "}";
    Response r;
    std::string err;
    int st = start_call(nd, nd.hb, uint64_t{k} << 1, "/v1/agent/heartbeat", body, o.hb_keep_alive, r, err);
    if (st != 0) on_done(k, false, st, r, err);
  };
  auto send_report = [&](uint32_t k) {
    Node& nd = nodes[k];
    nd.rep_measured = nd.hb_measured;
    const std::string name = node_name(nd.id);
    const std::string body = "{\"node\":\"" + name + "\",\"tasks\":[{\"assignment_id\":\"bench-" + name + "." +
                             std::to_string(nd.round) + ".0\",\"state\":\"exited\",\"exit_code\":0}]}";
    Response r;
    std::string err;
    int st = start_call(nd, nd.rep, (uint64_t{k} << 1) | 1, "/v1/agent/report", body, false, r, err);
    if (st != 0) on_done(k, true, st, r, err);
  };
  // The next heartbeat of node k is due one interval after this one's due time.
  auto schedule_next = [&](uint32_t k) {
    Node& nd = nodes[k];
    ++nd.round;
    nd.due += std::chrono::duration_cast<Clock::duration>(p.interval);
    if (nd.due < p.end()) queue.push({nd.due, k});
  };
  // A call ended (st 1: answered, -1: failed with err): count it, then what follows.
  on_done = [&](uint32_t k, bool is_report, int st, const Response& r, const std::string& err) {
    Node& nd = nodes[k];
    Call& c = is_report ? nd.rep : nd.hb;
    const bool measured = is_report ? nd.rep_measured : nd.hb_measured;
    inflight.remove(&c);
    const double ms = ms_between(c.t0, Clock::now());
    const char* what = is_report ? "report" : "heartbeat";
    const bool ok = st == 1 && r.status == 200;
    if (measured && !ok) ++res.kinds[std::string(what) + ": " + (st == 1 ? "status " + std::to_string(r.status) : err)];
    if (st == 1) {
      if (!is_report && o.hb_keep_alive && !r.server_closes)
        c.state = Call::idle;
      else if (!r.eof && r.server_closes)
        c.state = Call::draining;  // Closed when the server's FIN comes (or when the slot is used next).
      else
        close_call(c);
    } else {
      close_call(c);
    }
    if (measured) {
      if (is_report) {
        ++res.reports;
        if (ok)
          res.rep_ms.push_back(ms);
        else
          ++res.rep_errors;
      } else {
        if (ok)
          res.hb_ms.push_back(ms);
        else
          ++res.hb_errors;
      }
    }
    if (is_report) return;
    if (ok && o.report_every > 0 && (nd.round + nd.id) % o.report_every == 0 && nd.rep.inflight_pos == SIZE_MAX)
      send_report(k);
    schedule_next(k);
  };

  std::vector<epoll_event> events(1024);
  auto last_scan = Clock::now();
  // Runs until every heartbeat due before `end` is sent and answered (or timed out).
  while (true) {
    take_registered();
    auto now = Clock::now();
    while (!queue.empty() && queue.top().first <= now) {
      const uint32_t k = queue.top().second;
      queue.pop();
      if (nodes[k].hb.inflight_pos != SIZE_MAX) {
        queue.push({now + 5ms, k});  // The previous heartbeat is still out: send when it is back.
        break;
      }
      send_heartbeat(k);
    }
    if (queue.empty() && inflight.calls.empty() && cursor == nodes.size() && p.ended()) break;
    int timeout_ms = 10;
    if (!queue.empty()) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(queue.top().first - now).count();
      timeout_ms = static_cast<int>(std::clamp<long>(until, 0, 10));
    }
    int got = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int e = 0; e < got; ++e) {
      const uint64_t tag = events[static_cast<size_t>(e)].data.u64;
      const uint32_t k = static_cast<uint32_t>(tag >> 1);
      const bool is_report = tag & 1;
      Node& nd = nodes[k];
      Call& c = is_report ? nd.rep : nd.hb;
      if (c.fd < 0) continue;
      Response r;
      std::string err;
      const bool in_flight = c.inflight_pos != SIZE_MAX;
      int st = drive(c, r, err);
      if (st != 0 && in_flight) on_done(k, is_report, st, r, err);
    }
    now = Clock::now();
    if (now - last_scan >= 100ms) {
      last_scan = now;
      for (size_t i = 0; i < inflight.calls.size();) {
        Call* c = inflight.calls[i];
        if (c->deadline > now) {
          ++i;
          continue;
        }
        const auto k = static_cast<uint32_t>(c->tag >> 1);
        const bool is_report = c->tag & 1;
        on_done(k, is_report, -1, Response{}, "no answer in 10 s");
      }
    }
  }
  for (auto& nd : nodes) {
    close_call(nd.hb);
    close_call(nd.rep);
  }
  ::close(ep);
  return res;
}

// ---- Long polls (one epoll loop for every node) -------------------------------

struct PollStats {
  std::atomic<long> answered{0}, shed{0}, errors{0};
  std::map<std::string, long> kinds;  // Written by the poll loop only; read after it ends.
};

void poll_loop(const Plan& p, const std::atomic<bool>& stop, PollStats& stats) {
  struct Poll {
    Call c;
    long version = 0;
  };
  const int n = p.n;
  std::vector<Poll> polls(static_cast<size_t>(n));
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  Inflight inflight;
  using Due = std::pair<Clock::time_point, int>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> queue;
  // A node's first poll goes out once it is registered (at most 10,000 a second:
  // a burst of 50,000 SYNs would overflow the listen backlog).
  int cursor = 0;
  auto next_open = Clock::now();
  auto take_registered = [&] {
    for (; cursor < n; ++cursor) {
      const uint8_t r = p.registered[static_cast<size_t>(cursor)].load();
      if (r == 0) break;
      if (r != 1) continue;
      next_open = std::max(next_open, Clock::now()) + 100us;
      queue.push({next_open, cursor});
    }
  };
  struct Done {
    int i = 0;
    int st = 0;
    Response r;
    std::string err;
  };
  std::vector<Done> done;  // Calls that ended, handled by the loop (an answer can be there at once).
  auto send = [&](int i) {
    Poll& pl = polls[static_cast<size_t>(i)];
    pl.c.out = "GET /v1/agent/nodes/" + node_name(i) + "/assignments?wait_s=" + std::to_string(kPollWaitS) +
               "&version=" + std::to_string(pl.version) + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(p.port) +
               "\r\n\r\n";
    pl.c.off = 0;
    pl.c.split = 0;
    pl.c.t0 = Clock::now();
    pl.c.deadline = pl.c.t0 + std::chrono::seconds(kPollWaitS) + 15s;
    Done d;
    d.i = i;
    if (pl.c.state == Call::idle) {
      pl.c.state = Call::writing;
    } else {
      d.err = open_call(pl.c, ep, static_cast<uint64_t>(i), p.src.of(i), p.port, true);
      if (!d.err.empty()) {
        d.st = -1;
        done.push_back(std::move(d));
        return;
      }
    }
    inflight.add(&pl.c);
    d.st = drive(pl.c, d.r, d.err);
    if (d.st != 0) done.push_back(std::move(d));
  };
  auto handle = [&](Done& d) {
    const int i = d.i;
    Poll& pl = polls[static_cast<size_t>(i)];
    inflight.remove(&pl.c);
    auto error = [&](const std::string& why) {
      ++stats.errors;
      ++stats.kinds["long poll: " + why];
      close_call(pl.c);
      queue.push({Clock::now() + 1s, i});  // Back off like an agent on errors.
    };
    if (d.st < 0) return error(d.err);
    if (d.r.status != 200) return error("status " + std::to_string(d.r.status));
    ++stats.answered;
    int poll_after_ms = 0;
    auto j = json::parse(d.r.body, nullptr, false);
    if (j.is_object()) {
      pl.version = j.value("version", pl.version);
      poll_after_ms = j.value("poll_after_ms", 0);
    }
    if (poll_after_ms > 0) {  // Shed: come back later, with the agent's 0.75..1.25x jitter.
      ++stats.shed;
      close_call(pl.c);
      queue.push({Clock::now() + std::chrono::milliseconds(poll_after_ms * (75 + i * 7919 % 51) / 100), i});
      return;
    }
    if (d.r.server_closes) {
      close_call(pl.c);
      queue.push({Clock::now(), i});
      return;
    }
    pl.c.state = Call::idle;
    send(i);
  };
  std::vector<epoll_event> events(1024);
  auto last_scan = Clock::now();
  while (!stop) {
    take_registered();
    auto now = Clock::now();
    while (!queue.empty() && queue.top().first <= now) {
      const int i = queue.top().second;
      queue.pop();
      if (polls[static_cast<size_t>(i)].c.inflight_pos == SIZE_MAX) send(i);
    }
    int got = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), done.empty() ? 10 : 0);
    for (int e = 0; e < got; ++e) {
      const int i = static_cast<int>(events[static_cast<size_t>(e)].data.u64);
      Poll& pl = polls[static_cast<size_t>(i)];
      if (pl.c.fd < 0) continue;
      const bool was_idle = pl.c.state == Call::idle;
      Done d;
      d.i = i;
      d.st = drive(pl.c, d.r, d.err);
      if (was_idle) {
        if (pl.c.fd < 0) queue.push({Clock::now(), i});  // The server closed it between polls: reconnect.
        continue;
      }
      if (d.st != 0) done.push_back(std::move(d));
    }
    // handle() may send the next poll, which may end at once and add to `done`: the
    // next turn of the loop takes those.
    std::vector<Done> batch;
    batch.swap(done);
    for (auto& d : batch) handle(d);
    now = Clock::now();
    if (now - last_scan >= 500ms) {
      last_scan = now;
      for (size_t k = 0; k < inflight.calls.size();) {
        Call* c = inflight.calls[k];
        if (c->deadline > now) {
          ++k;
          continue;
        }
        Done d;
        d.i = static_cast<int>(c->tag);
        d.st = -1;
        d.err = "no answer in wait_s + 15 s";
        handle(d);  // Removes it from the in-flight list.
      }
    }
  }
  for (auto& pl : polls) close_call(pl.c);
  ::close(ep);
}

// ---- One run --------------------------------------------------------------------

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
  p.src.count = o.source_ips > 0 ? o.source_ips : std::max(1, (n + 9999) / 10000);
  row.sources = p.src.count;
  p.interval = std::chrono::duration<double>(o.interval);
  p.inventory = inventory().dump();
  ErrorKinds kinds;

  p.registered = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p.registered[static_cast<size_t>(i)] = 0;

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
      "[--reg-threads 64] [--report-every 6] [--source-ips K] [--no-long-poll] [--no-nodelay] [--hb-keep-alive] "
      "[--scheduler PATH] [--scheduler-log-level warn] [--scheduler-arg ARG]...\n";
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
    else if (a == "--hb-keep-alive")
      o.hb_keep_alive = true;
    else if (a == "--scheduler")
      o.scheduler = val();
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
  signal(SIGPIPE, SIG_IGN);
  // One socket per simulated node (its long poll) plus the heartbeats in flight,
  // here and in the scheduler, which inherits this limit.
  const rlim_t nofile = raise_nofile();
  const int most = *std::max_element(o.nodes.begin(), o.nodes.end());
  if (nofile < static_cast<rlim_t>(most) + 2048)
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
