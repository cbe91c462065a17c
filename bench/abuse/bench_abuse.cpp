// bench_abuse: is the scheduler still answering while clients abuse its HTTP server?
// Not run in CI; see bench/RESULTS.md.
//
// For each scheduler (the one built here, and with --baseline PATH another binary,
// e.g. the cpp-httplib scheduler of ab5da7a, in the same run) it:
//   1. starts it with its default flags (--listen 127.0.0.1:0, a fresh --db in a
//      temp dir, --log-level warn), and measures --quiet-samples healthz and job
//      submissions with nothing else going on;
//   2. opens --idle TCP connections that never send a byte, and --slow connections
//      that send a request head one byte per second and never finish it
//      ("slowloris"), all non-blocking sockets on one epoll loop (no thread per
//      connection); a connection the server closes is opened again 100 ms later
//      (as an attacker would; --no-reopen: not), so the abuse lasts;
//   3. while that goes on, for --seconds (default 15: past the new server's 10 s
//      head timeout) measures GET /healthz and POST /v1/jobs
//      ({"command":["true"],"devices":1}: queued, 201) --samples times each, evenly
//      spread and open loop (each sent at its time on its own thread, answered or
//      not the ones before), each on a fresh connection (connect included,
//      --timeout seconds at most: a timeout is an error, not a latency);
//   4. prints p50/p99/max of both, errors by kind, how many idle and slow
//      connections the server closed and when (seconds after the connection's
//      first byte for slow ones, after connect for idle ones), and the scheduler's
//      CPU over the window (utime+stime, 100 % = one core), RSS and peak RSS, and
//      its tessel_http_* counters when it has them.
// It raises RLIMIT_NOFILE (the hard limit too when it may: root) first; the
// schedulers inherit it.
//
//   bench_abuse [--idle 5000] [--slow 1000] [--seconds 15] [--samples 50] [--timeout 5]
//               [--quiet-samples 10] [--no-reopen] [--scheduler PATH] [--scheduler-arg ARG]...
//               [--baseline PATH] [--baseline-arg ARG]...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "benchkit.hpp"

namespace {

namespace benchkit = tessel::benchkit;
using benchkit::Clock;
using benchkit::cpu_ticks;
using benchkit::ms_between;
using benchkit::raise_nofile;
using benchkit::status_field;
using namespace std::chrono_literals;

struct Options {
  int idle = 5000;
  int slow = 1000;
  double seconds = 15;
  int samples = 50;
  int quiet_samples = 10;
  double timeout_s = 5;
  bool reopen = true;
  std::string scheduler = TESSEL_SCHEDULER_BIN;
  std::vector<std::string> scheduler_args;
  std::string baseline;  // Empty: none.
  std::vector<std::string> baseline_args;
};

// A scheduler child with a fresh DB in its own temp dir; SIGTERM (then SIGKILL) on destruction.
struct Scheduler {
  Scheduler(const std::string& bin, const std::vector<std::string>& extra, const std::string& tag)
      : dir("tessel-bench-abuse-" + tag),
        server(benchkit::scheduler_argv(bin, dir.str("s.db"), with_log_level(extra)), dir.str("scheduler.out")) {}
  static std::vector<std::string> with_log_level(std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--log-level", "warn"});
    return extra;
  }
  benchkit::TempDir dir;
  benchkit::ServerProcess server;
};

// ---- The measuring client: one request on a fresh connection ------------------

struct Answer {
  int status = 0;  // 0: no answer (err says why).
  double ms = 0;
  std::string err;
  std::string body;
};

int connect_nonblocking(int port, std::string& err) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    err = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends one request ("Connection: close") and reads the whole answer, within timeout.
Answer request(int port, const std::string& method, const std::string& path, const std::string& body,
               double timeout_s) {
  Answer ans;
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  int fd = connect_nonblocking(port, ans.err);
  if (fd < 0) return ans;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string out =
      method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST")
    out += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n" + body;
  size_t off = 0;
  std::string in;
  bool done = false;
  while (!done) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ans.err = off < out.size() ? "timeout (connecting or sending)"
                : in.empty()     ? "timeout (no answer)"
                                 : "timeout (mid-answer)";
      break;
    }
    pollfd pf{fd, static_cast<short>(off < out.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&pf, 1, static_cast<int>(std::min<long>(left, 100))) <= 0) continue;
    if (off < out.size()) {
      ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += static_cast<size_t>(w);
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        ans.err = std::string("send: ") + std::strerror(errno);
        break;
      }
      continue;
    }
    char buf[16384];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r > 0) {
      in.append(buf, static_cast<size_t>(r));
      // Done once Content-Length bytes of body are in (or at EOF).
      auto head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = in.substr(0, head_end);
        for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto cl = head.find("content-length:");
        if (cl != std::string::npos && in.size() >= head_end + 4 + std::strtoul(head.c_str() + cl + 15, nullptr, 10))
          done = true;
      }
    } else if (r == 0) {
      done = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ans.err = std::string("recv: ") + std::strerror(errno);
      break;
    }
  }
  ::close(fd);
  ans.ms = ms_between(t0, Clock::now());
  if (done) {
    if (in.rfind("HTTP/1.", 0) == 0 && in.size() > 12) {
      ans.status = std::atoi(in.c_str() + 9);
      auto head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) ans.body = in.substr(head_end + 4);
    } else {
      ans.err = in.empty() ? "closed without an answer" : "malformed answer";
    }
  }
  return ans;
}

// ---- The abuse: idle and slow connections on one epoll loop ---------------------

struct AbuseStats {
  long idle_open_at_end = 0, slow_open_at_end = 0;
  long idle_closed = 0, slow_closed = 0;  // By the server (EOF or reset), during the run.
  long answered = 0;                      // Connections the server wrote something to (e.g. 503, 408).
  std::map<int, long> answer_status;      // Status codes of those answers.
  long connect_errors = 0, reopened = 0;
  std::vector<double> slow_close_s;         // Seconds from first byte to the server's close.
  std::vector<double> idle_close_s;         // Seconds from connect to the server's close.
  std::vector<double> slow_first_close_at;  // Seconds after the abuse started, per close (slow).
};

class Abuse {
 public:
  Abuse(int port, const Options& o) : port_(port), o_(o) {}

  void run(const std::atomic<bool>& stop, std::atomic<bool>& ready) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    const size_t total = static_cast<size_t>(o_.idle + o_.slow);
    conns_.resize(total);
    for (size_t i = 0; i < total; ++i) conns_[i].slow = i >= static_cast<size_t>(o_.idle);
    start_ = Clock::now();
    size_t next_open = 0;
    std::vector<epoll_event> events(1024);
    while (!stop) {
      auto now = Clock::now();
      // Open in bursts of 500 per turn: fast, without overflowing the listen backlog.
      for (size_t k = 0; k < 500 && next_open < total; ++k) open(next_open++, now);
      if (next_open == total && !ready) {
        size_t up = 0;
        for (auto& c : conns_) up += c.connected ? 1 : 0;
        if (up == total || now - start_ > 10s) ready = true;
      }
      int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 20);
      now = Clock::now();
      for (int e = 0; e < n; ++e) on_event(events[static_cast<size_t>(e)].data.u32, now);
      // One more byte per second on every slow connection; reopen what was closed.
      for (size_t i = 0; i < next_open; ++i) {
        Conn& c = conns_[i];
        if (c.fd < 0) {
          if (o_.reopen && c.retry_at <= now) {
            ++stats_.reopened;
            open(i, now);
          }
          continue;
        }
        if (c.slow && c.connected && c.next_send <= now && c.sent < kHead.size()) send_byte(i, now);
      }
    }
    for (auto& c : conns_) {
      if (c.fd < 0) continue;
      (c.slow ? stats_.slow_open_at_end : stats_.idle_open_at_end) += 1;
      ::close(c.fd);
      c.fd = -1;
    }
    ::close(ep_);
  }

  const AbuseStats& stats() const { return stats_; }

 private:
  struct Conn {
    int fd = -1;
    bool slow = false;
    bool connected = false;
    bool answered = false;
    size_t sent = 0;
    Clock::time_point connected_at{}, first_byte{}, next_send{}, retry_at{};
  };
  // Never finished: 1,000 s at a byte a second.
  inline static const std::string kHead =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slowloris\r\nX-Slow: " + std::string(1000, 'a');

  void open(size_t i, Clock::time_point now) {
    Conn& c = conns_[i];
    c = Conn{-1, c.slow};
    std::string err;
    c.fd = connect_nonblocking(port_, err);
    if (c.fd < 0) {
      ++stats_.connect_errors;
      c.retry_at = now + 1s;
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u32 = static_cast<uint32_t>(i);
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
  }

  // The server closed it (or reset it, or the connect failed).
  void lost(size_t i, Clock::time_point now, bool by_server) {
    Conn& c = conns_[i];
    if (by_server) {
      if (c.slow) {
        ++stats_.slow_closed;
        if (c.sent > 0) stats_.slow_close_s.push_back(std::chrono::duration<double>(now - c.first_byte).count());
        stats_.slow_first_close_at.push_back(std::chrono::duration<double>(now - start_).count());
      } else {
        ++stats_.idle_closed;
        stats_.idle_close_s.push_back(std::chrono::duration<double>(now - c.connected_at).count());
      }
    } else {
      ++stats_.connect_errors;
    }
    ::close(c.fd);
    c.fd = -1;
    c.retry_at = now + (by_server ? 100ms : 1s);
  }

  void send_byte(size_t i, Clock::time_point now) {
    Conn& c = conns_[i];
    ssize_t w = ::send(c.fd, kHead.data() + c.sent, 1, MSG_NOSIGNAL);
    if (w == 1) {
      if (c.sent == 0) c.first_byte = now;
      ++c.sent;
      c.next_send = (c.sent == 1 ? now : c.next_send) + 1s;
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      lost(i, now, true);
    }
  }

  void on_event(uint32_t i, Clock::time_point now) {
    Conn& c = conns_[i];
    if (c.fd < 0) return;
    if (!c.connected) {
      int so = 0;
      socklen_t len = sizeof so;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &so, &len);
      if (so != 0) return lost(i, now, false);
      sockaddr_in peer{};
      socklen_t plen = sizeof peer;
      if (::getpeername(c.fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return;  // Still connecting.
      c.connected = true;
      c.connected_at = now;
      if (c.slow) send_byte(i, now);
      if (c.fd < 0) return;
    }
    char buf[4096];
    for (;;) {
      ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
      if (r > 0) {
        if (!c.answered && r > 12 && std::strncmp(buf, "HTTP/1.", 7) == 0) {
          c.answered = true;
          ++stats_.answered;
          ++stats_.answer_status[std::atoi(buf + 9)];
        }
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      return lost(i, now, true);  // EOF or reset: the server closed it.
    }
  }

  int port_;
  const Options& o_;
  int ep_ = -1;
  std::vector<Conn> conns_;
  Clock::time_point start_;
  AbuseStats stats_;
};

// ---- One scheduler --------------------------------------------------------------

struct Series {
  std::vector<double> ok_ms;
  std::map<std::string, long> errors;  // Kind -> count.
  long total = 0;
};

void record(Series& s, const Answer& a, int want) {
  ++s.total;
  if (a.status == want)
    s.ok_ms.push_back(a.ms);
  else
    ++s.errors[a.status ? "status " + std::to_string(a.status) : a.err];
}

void print_series(const std::string& label, const std::string& phase, const std::string& what, const Series& s) {
  long errors = 0;
  for (auto& [k, v] : s.errors) errors += v;
  if (s.ok_ms.empty()) {
    std::printf("%-10s %-6s %-8s %5ld %5d %6ld %9s %9s %9s\n", label.c_str(), phase.c_str(), what.c_str(), s.total, 0,
                errors, "-", "-", "-");
  } else {
    std::printf("%-10s %-6s %-8s %5ld %5zu %6ld %9.2f %9.2f %9.2f\n", label.c_str(), phase.c_str(), what.c_str(),
                s.total, s.ok_ms.size(), errors, benchkit::percentile(s.ok_ms, 50), benchkit::percentile(s.ok_ms, 99),
                *std::max_element(s.ok_ms.begin(), s.ok_ms.end()));
  }
  for (auto& [k, v] : s.errors)
    std::printf("%-10s %-6s %-8s   error: %ld x %s\n", label.c_str(), phase.c_str(), what.c_str(), v, k.c_str());
}

// The value of "NAME VALUE" in Prometheus text, or "-".
std::string metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return line.substr(name.size() + 1);
  return "-";
}

std::string summary(std::vector<double> v) {
  if (v.empty()) return "-";
  char b[96];
  std::snprintf(b, sizeof b, "%.1f/%.1f/%.1f", *std::min_element(v.begin(), v.end()), benchkit::percentile(v, 50),
                *std::max_element(v.begin(), v.end()));
  return b;
}

const std::string kJob = R"({"command":["true"],"devices":1})";

bool run_one(const Options& o, const std::string& label, const std::string& bin, const std::vector<std::string>& args) {
  Scheduler s(bin, args, label);
  if (s.server.port() <= 0) {
    std::fprintf(stderr, "bench_abuse: %s (%s) did not start\n", label.c_str(), bin.c_str());
    return false;
  }
  const auto timeout = o.timeout_s;
  // Quiet: nothing else going on.
  Series qh, qs;
  for (int k = 0; k < o.quiet_samples; ++k) {
    record(qh, request(s.server.port(), "GET", "/healthz", "", timeout), 200);
    record(qs, request(s.server.port(), "POST", "/v1/jobs", kJob, timeout), 201);
  }
  print_series(label, "quiet", "healthz", qh);
  print_series(label, "quiet", "submit", qs);
  std::fflush(stdout);

  // Abuse, then the measured window while it goes on.
  Abuse abuse(s.server.port(), o);
  std::atomic<bool> stop{false}, ready{false};
  const auto abuse_start = Clock::now();
  std::thread t([&] { abuse.run(stop, ready); });
  while (!ready && Clock::now() - abuse_start < 15s) std::this_thread::sleep_for(10ms);
  const double setup_s = std::chrono::duration<double>(Clock::now() - abuse_start).count();
  const long ticks0 = cpu_ticks(s.server.pid());
  const auto w0 = Clock::now();
  const auto step = std::chrono::duration<double>(o.seconds / std::max(1, o.samples));
  // Open loop: each request goes out at its own time on its own thread, whether or not
  // the ones before were answered, so a stalled server cannot hide behind a slow
  // client (and the window stays --seconds + --timeout long at most).
  std::vector<Answer> answers(static_cast<size_t>(2 * o.samples));
  std::vector<std::thread> senders;
  for (int k = 0; k < 2 * o.samples; ++k) {
    const auto due = w0 + std::chrono::duration_cast<Clock::duration>(step * (k / 2 + 0.5 * (k % 2)));
    std::this_thread::sleep_until(due);
    senders.emplace_back([&, k] {
      answers[static_cast<size_t>(k)] = k % 2 == 0 ? request(s.server.port(), "GET", "/healthz", "", timeout)
                                                   : request(s.server.port(), "POST", "/v1/jobs", kJob, timeout);
    });
  }
  for (auto& t : senders) t.join();
  Series ah, as;
  for (int k = 0; k < 2 * o.samples; ++k) {
    if (k % 2 == 0)
      record(ah, answers[static_cast<size_t>(k)], 200);
    else
      record(as, answers[static_cast<size_t>(k)], 201);
  }
  // Cover the whole window even when the samples ended early.
  std::this_thread::sleep_until(w0 +
                                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds)));
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  const double cpu = 100.0 * static_cast<double>(cpu_ticks(s.server.pid()) - ticks0) /
                     static_cast<double>(sysconf(_SC_CLK_TCK)) / wall;
  const double rss = status_field(s.server.pid(), "VmRSS", true), hwm = status_field(s.server.pid(), "VmHWM", true),
               threads = status_field(s.server.pid(), "Threads", false);
  const Answer m = request(s.server.port(), "GET", "/metrics", "", timeout);
  stop = true;
  t.join();
  const double abuse_s = std::chrono::duration<double>(Clock::now() - abuse_start).count();
  print_series(label, "abuse", "healthz", ah);
  print_series(label, "abuse", "submit", as);
  const AbuseStats& st = abuse.stats();
  std::printf("%s: abuse: %d idle + %d slow connections, all up after %.2f s, measured %.1f s, abuse lasted %.1f s\n",
              label.c_str(), o.idle, o.slow, setup_s, wall, abuse_s);
  std::printf("%s: idle: closed by the server %ld (s after connect min/p50/max %s), open at the end %ld\n",
              label.c_str(), st.idle_closed, summary(st.idle_close_s).c_str(), st.idle_open_at_end);
  std::printf(
      "%s: slow: closed by the server %ld (s after first byte min/p50/max %s; s after abuse start %s), "
      "open at the end %ld\n",
      label.c_str(), st.slow_closed, summary(st.slow_close_s).c_str(), summary(st.slow_first_close_at).c_str(),
      st.slow_open_at_end);
  std::printf("%s: reopened %ld, connect errors %ld, connections answered by the server %ld", label.c_str(),
              st.reopened, st.connect_errors, st.answered);
  for (auto& [code, n] : st.answer_status) std::printf(" [%d: %ld]", code, n);
  std::printf("\n%s: scheduler CPU %.1f %% (window), RSS %.1f MiB, peak %.1f MiB, %.0f threads\n", label.c_str(), cpu,
              rss, hwm, threads);
  if (m.status == 200)
    std::printf(
        "%s: /metrics: tessel_http_connections %s, tessel_http_connections_total %s, "
        "tessel_http_connections_rejected_total %s, tessel_http_timeouts_total %s\n",
        label.c_str(), metric(m.body, "tessel_http_connections").c_str(),
        metric(m.body, "tessel_http_connections_total").c_str(),
        metric(m.body, "tessel_http_connections_rejected_total").c_str(),
        metric(m.body, "tessel_http_timeouts_total").c_str());
  else
    std::printf("%s: /metrics: no answer (%s)\n", label.c_str(),
                m.status ? std::to_string(m.status).c_str() : m.err.c_str());
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const char* usage =
      "usage: bench_abuse [--idle 5000] [--slow 1000] [--seconds 15] [--samples 50] [--timeout 5] "
      "[--quiet-samples 10] [--no-reopen] [--scheduler PATH] [--scheduler-arg ARG]... [--baseline PATH] "
      "[--baseline-arg ARG]...\n";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_abuse: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--idle")
      o.idle = std::clamp(std::atoi(val().c_str()), 0, 500000);
    else if (a == "--slow")
      o.slow = std::clamp(std::atoi(val().c_str()), 0, 500000);
    else if (a == "--seconds")
      o.seconds = std::clamp(std::atof(val().c_str()), 1.0, 600.0);
    else if (a == "--samples")
      o.samples = std::clamp(std::atoi(val().c_str()), 1, 1000);
    else if (a == "--quiet-samples")
      o.quiet_samples = std::clamp(std::atoi(val().c_str()), 0, 100000);
    else if (a == "--timeout")
      o.timeout_s = std::clamp(std::atof(val().c_str()), 0.1, 120.0);
    else if (a == "--no-reopen")
      o.reopen = false;
    else if (a == "--scheduler")
      o.scheduler = val();
    else if (a == "--scheduler-arg")
      o.scheduler_args.push_back(val());
    else if (a == "--baseline")
      o.baseline = val();
    else if (a == "--baseline-arg")
      o.baseline_args.push_back(val());
    else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  const rlim_t nofile = raise_nofile();
  if (nofile < static_cast<rlim_t>(o.idle + o.slow) + 1024)
    std::fprintf(stderr, "bench_abuse: open file limit %lu is short for %d connections (run as root, or raise it)\n",
                 static_cast<unsigned long>(nofile), o.idle + o.slow);
  std::printf("%-10s %-6s %-8s %5s %5s %6s %9s %9s %9s\n", "server", "phase", "request", "sent", "ok", "errors",
              "p50_ms", "p99_ms", "max_ms");
  bool ok = run_one(o, "current", o.scheduler, o.scheduler_args);
  if (!o.baseline.empty()) ok = run_one(o, "baseline", o.baseline, o.baseline_args) && ok;
  return ok ? 0 : 1;
}
