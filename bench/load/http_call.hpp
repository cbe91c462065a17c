#pragma once
// bench_load's HTTP client: one request and its response on a non-blocking socket,
// driven by edge-triggered epoll events, with no thread per connection; the source
// address of a node's connections; in-flight calls for read timeouts; errors by kind.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "benchkit.hpp"

namespace tessel::bench_load {

using benchkit::Clock;

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

struct Response {
  int status = 0;
  bool server_closes = false;  // "Connection: close", or it closed already.
  bool eof = false;            // It closed already.
  std::string body;
};

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

// Opens fd for `c` (closed) and starts connecting. Returns an errno-ish message on failure.
std::string open_call(Call& c, int ep, uint64_t tag, uint32_t src, int port, bool nodelay);
void close_call(Call& c);
// 1: a whole response in c.in (taken out), 0: need more, -1: malformed.
int take_response(Call& c, Response& r);
// Drives `c` after an event (or right after open/new request). Returns:
//   0 still going, 1 response complete (in r), -1 failed (err says why; fd closed).
int drive(Call& c, Response& r, std::string& err);
// A POST with a JSON body; *split (when given) is where its head ends.
std::string post_request(const std::string& path, int port, const std::string& body, bool keep_alive, size_t* split);

}  // namespace tessel::bench_load
