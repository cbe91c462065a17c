#pragma once
// FollowerReads: what a follower replica answers itself instead of redirecting to the
// leader: GET /v1/jobs, /v1/jobs/{id}, /v1/nodes, /v1/nodes/{name} and /v1/inventory,
// with the same authentication, the same JSON and the header `X-Tessel-Role: follower`.
// They are answered by the leader's own route handlers over a read-only ClusterState
// restored from one snapshot of the database (Store::load, a REPEATABLE READ
// transaction). A request finding that view older than `max_age` loads a new one first
// (one load at a time; concurrent requests wait for it), so an answer is at most
// max_age plus one load behind the last commit. The follower's store reads only the
// rows written since its previous load (PgStore, read_only); when there were none the
// view is kept as it is, else a new one is restored from the merged tables, logging
// one line at debug. What a follower cannot know: pending
// jobs' queue positions and estimated starts (the leader's scheduling pass computes
// them) and which nodes are down or degraded (the leader learns that from heartbeats,
// which are not stored): every node shows as its stored record says. When the
// database cannot be read the request gets 503.
// Thread-safe; the routes run on the server's blocking pool (a load waits for the
// database).

#include <chrono>
#include <memory>
#include <optional>

#include "tessel/http/server.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/scheduler/tokens.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

// The header a follower's own answers carry.
inline constexpr const char* kRoleHeader = "X-Tessel-Role";

class FollowerReads {
 public:
  // `store` is read only (load()); it and `clock` outlive this object.
  FollowerReads(Store& store, const Clock& clock, std::optional<TokenTable> tokens, std::chrono::milliseconds max_age);
  ~FollowerReads();
  FollowerReads(const FollowerReads&) = delete;
  FollowerReads& operator=(const FollowerReads&) = delete;

  // Adds the read routes above to `r`.
  void add_routes(http::Router& r);

 private:
  struct View;
  // The current view, loaded again when older than max_age_. Errors: the load's.
  Result<std::shared_ptr<View>> view() EXCLUDES(load_mu_, mu_);
  void serve(http::Request& req, const http::Reply& reply);

  Store& store_;
  const Clock& clock_;
  const std::optional<TokenTable> tokens_;
  const std::chrono::milliseconds max_age_;
  Mutex load_mu_;  // One load at a time; held across it (mu_ is not).
  Mutex mu_;
  std::shared_ptr<View> view_ GUARDED_BY(mu_);
  int64_t loaded_ns_ GUARDED_BY(mu_) = 0;  // clock_.steady_ns() when the load of view_ began.
};

}  // namespace tessel::scheduler
