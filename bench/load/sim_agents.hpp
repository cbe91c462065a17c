#pragma once
// bench_load's simulated agents: node i's name and its fake 8-card Gaudi 2
// inventory, the plan the loops share, the heartbeat (and report) loops and the one
// loop that holds every node's long poll.

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "http_call.hpp"
#include "load_options.hpp"

namespace tessel::bench_load {

// The registration inventory every simulated node sends.
nlohmann::json inventory();
// The readings of inventory()'s cards, as a heartbeat carries them.
nlohmann::json readings();
// The inventory_tag of a register or heartbeat answer's body; 0 when it has none.
int64_t inventory_tag_of(const std::string& body);
// "sim-00042".
std::string node_name(int i);

// What the loops share. Registration runs beside them: a node heartbeats and polls
// from the moment its registration is answered, like an agent; the measured window
// (set once every node is registered) starts a warm-up after that.
struct Plan {
  int n = 0;
  int port = 0;
  Sources src;
  std::chrono::duration<double> interval{5.0};
  const Options* o = nullptr;
  std::string inventory;  // Serialized once.
  std::string readings;   // Its cards' readings, serialized once.
  // Per node: the inventory tag its registration answered (0: none), written before
  // its `registered` entry.
  std::unique_ptr<int64_t[]> tags;
  std::unique_ptr<std::atomic<uint8_t>[]> registered;  // Per node: 0 not yet, 1 registered, 2 failed.
  std::atomic<Clock::rep> measure_from_t{std::numeric_limits<Clock::rep>::max()};
  std::atomic<Clock::rep> end_t{std::numeric_limits<Clock::rep>::max()};
  Clock::time_point measure_from() const { return Clock::time_point(Clock::duration(measure_from_t.load())); }
  Clock::time_point end() const { return Clock::time_point(Clock::duration(end_t.load())); }
  bool ended() const { return Clock::now() >= end(); }
};

// Spreads node i's heartbeats over the interval (independent of registration order).
double phase(int i);

struct HbResult {
  std::vector<double> hb_ms, rep_ms;
  long hb_errors = 0, rep_errors = 0, late = 0, reports = 0;
  std::map<std::string, long> kinds;
};

// Heartbeats (and reports) of nodes t, t+T, t+2T, ... on one epoll loop.
HbResult heartbeat_loop(const Plan& p, int t, int threads);

struct PollStats {
  std::atomic<long> answered{0}, shed{0}, errors{0};
  std::map<std::string, long> kinds;  // Written by the poll loop only; read after it ends.
};

// Every registered node's assignments long poll, on one epoll loop, until `stop`.
void poll_loop(const Plan& p, const std::atomic<bool>& stop, PollStats& stats);

}  // namespace tessel::bench_load
