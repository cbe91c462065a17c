#include "sim_agents.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
#include <utility>

namespace tessel::bench_load {

using json = nlohmann::json;
using benchkit::ms_between;
using namespace std::chrono_literals;

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

json readings() {
  json out = json::array();
  const json inv = inventory();  // Not inventory()["devices"] in the loop: the temporary would be gone.
  for (const json& d : inv["devices"])
    out.push_back({{"index", d["index"]},
                   {"memory_used_mib", d["memory_used_mib"]},
                   {"utilization_pct", d["utilization_pct"]},
                   {"temperature_c", d["temperature_c"]},
                   {"power_w", d["power_w"]}});
  return out;
}

int64_t inventory_tag_of(const std::string& body) {
  static const std::string kKey = "\"inventory_tag\":";
  const size_t at = body.find(kKey);
  if (at == std::string::npos) return 0;
  return std::strtoll(body.c_str() + at + kKey.size(), nullptr, 10);
}

std::string node_name(int i) {
  char b[32];
  std::snprintf(b, sizeof b, "sim-%05d", i);
  return b;
}

double phase(int i) { return static_cast<double>(static_cast<uint32_t>(i) * 2654435761u % 1000u) / 1000.0; }

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
    int64_t tag = 0;  // The scheduler's inventory tag: heartbeats carry readings (0: the inventory).
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
      nd.tag = p.tags[static_cast<size_t>(nd.id)];
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
    const std::string body = o.readings && nd.tag > 0
                                 ? hb_prefix + node_name(nd.id) + "\",\"inventory_tag\":" + std::to_string(nd.tag) +
                                       ",\"readings\":" + p.readings + "}"
                                 : hb_prefix + node_name(nd.id) + hb_mid + p.inventory + "}";
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
    if (!is_report && st == 1) nd.tag = ok ? inventory_tag_of(r.body) : 0;  // As the agent keeps it.
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

}  // namespace tessel::bench_load
