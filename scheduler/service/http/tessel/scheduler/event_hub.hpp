#pragma once
// EventHub: the console's live updates, GET /v1/events as server-sent events.
//
// One timer per hub, not one per client, compares ClusterState's change counters
// with those it sent last (every tick while a client is connected) and, when they
// moved, sends each client one small event naming the counters; the page then
// fetches only the resources of the kinds that changed. Nothing is read per client.
//
// Bounded: at most max_clients streams (past it a request is answered 503), at
// most one event in flight per client (a newer event replaces one not yet sent,
// which loses nothing: events carry counters, not deltas), at most
// max_clients_per_user for one user, and a client whose write has not completed
// after slow_client_ms is dropped, as is one whose connection closes (the server
// sees it at once). A comment line every keepalive_ms keeps proxies from timing out.
//
// Threading: mu_ guards the client list; the timer runs on an I/O thread of the
// server and write completions on any thread. Lifetime: the ClusterState, the
// Server and the Clock outlive the hub; stop() before the server stops.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessel/http/server.hpp"
#include "tessel/scheduler/state.hpp"
#include "tessel/scheduler/stream_slots.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

struct EventHubOptions {
  size_t max_clients = 64;
  size_t max_clients_per_user = 8;  // Past it that user's next stream is a 429; 0: no cap.
  int64_t tick_ms = 200;            // Real time between two looks at the counters.
  int64_t keepalive_ms = 15'000;
  int64_t slow_client_ms = 10'000;
};

class EventHub {
 public:
  EventHub(const ClusterState& state, http::Server& server, const Clock& clock, EventHubOptions opts);
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // Answers with an event stream whose first event carries the current counters,
  // or with 503 when max_clients streams are open or the hub stopped, or 429 when
  // `user` holds max_clients_per_user. A stream whose client leaves is dropped at once.
  void subscribe(const http::Reply& reply, const std::string& user) EXCLUDES(mu_);
  // Drops every stream; later subscriptions are refused.
  void stop() EXCLUDES(mu_);
  size_t clients() const EXCLUDES(mu_);

  // The event for `counts`, as written on the wire.
  static std::string render(const ClusterState::ChangeCounts& counts);

 private:
  // Its fields are guarded by the hub's mu_ (the stream is set once, before it is shared).
  struct Client {
    std::shared_ptr<http::BodyStream> stream;
    std::shared_ptr<void> slot;  // Its user's StreamSlots slot, free again with the client.
    bool writing = false;
    int64_t writing_since_ms = 0;
    std::string queued;  // The newest event not yet written; empty when none.
  };
  void attach(std::shared_ptr<http::BodyStream> stream, std::shared_ptr<void> slot) EXCLUDES(mu_);
  void tick() EXCLUDES(mu_);
  void schedule_tick_locked() REQUIRES(mu_);
  // Writes `data` now, or queues it behind the write in flight.
  void send(const std::shared_ptr<Client>& c, std::string data) EXCLUDES(mu_);
  void written(const std::weak_ptr<Client>& weak, bool ok) EXCLUDES(mu_);
  void drop_locked(const std::shared_ptr<Client>& c) REQUIRES(mu_);

  const ClusterState& state_;
  http::Server& server_;
  const Clock& clock_;
  const EventHubOptions opts_;

  const std::shared_ptr<StreamSlots> slots_;  // Per user.
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Client>> clients_ GUARDED_BY(mu_);
  ClusterState::ChangeCounts sent_ GUARDED_BY(mu_);
  int64_t last_write_ms_ GUARDED_BY(mu_) = 0;
  bool ticking_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace tessel::scheduler
