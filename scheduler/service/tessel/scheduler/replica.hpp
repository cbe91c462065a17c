#pragma once
// Scheduler replicas on one PostgreSQL database, one of them the leader (pg_lease.hpp).
// A replica starts as a Follower: it serves GET /healthz with its role, the reads of
// FollowerReads (jobs, nodes, inventory) from the database, answers every other
// request with 307 to the leader's advertised URL, and tries the lease every renew
// interval, and at once when the leader's clean stop notifies its release. Once it holds the lease it stops that
// server, opens its store with the lease's epoch (every write checks it), starts the Service on the same port, and a
// LeaseKeeper renews the lease; when the lease is lost (another replica's epoch, or no renewal for a whole lease
// length) the process steps down: it stops serving and exits, and its service manager starts it again as a follower.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "tessel/http/server.hpp"
#include "tessel/scheduler/follower_reads.hpp"
#include "tessel/scheduler/pg_lease.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

struct ReplicaOptions {
  std::chrono::milliseconds renew{1000};  // Between tries (followers) and renewals (the leader).
  std::chrono::milliseconds lease{3000};  // The lease's length (also in LeaseOptions).
  // A follower's reads come from a view of the database at most this old (FollowerReads).
  std::chrono::milliseconds read_max_age{500};
};

// Prometheus text: tessel_leader (1 on the leader, 0 on a follower),
// tessel_leader_epoch (the lease's epoch as this replica last saw it) and
// tessel_leader_changes_total (`changes`: Follower::leader_changes()).
std::string render_replica_metrics(bool leader, int64_t epoch, uint64_t changes);

// Waits for the lease, serving the follower's HTTP meanwhile.
class Follower {
 public:
  // `reads` (may be null: every read is redirected too) outlives the Follower.
  Follower(PgLease& lease, ReplicaOptions o, FollowerReads* reads = nullptr) : lease_(lease), o_(o), reads_(reads) {}
  // Binds `so` (port 0: any; port() then tells) and serves until lead() returns.
  Status start(http::ServerOptions so);
  int port() const { return server_ ? server_->port() : 0; }
  // Tries the lease every renew interval until this replica holds it (its epoch) or
  // stop() was called (0). Stops the follower's server before returning.
  // `after_try` (when set) runs after each try with the view it left (systemd's
  // READY=1 and watchdog pings while following).
  int64_t lead(const std::function<void(const LeaseView&)>& after_try = nullptr);
  // Makes lead() return 0; safe from any thread (a signal thread).
  void stop();
  // Changes of leader this replica has seen since it started: the lease's epoch moving
  // on between two of its tries, and its own takeover (the first try only sets where
  // it starts from, unless it takes the lease).
  uint64_t leader_changes() const EXCLUDES(mu_);

 private:
  // lead()'s second thread: LISTENs for the leader's clean release
  // (PgLease::listen_for_release) on `conn` (null: it connects, and again after a
  // failure) and wakes lead() to try at once.
  void listen_for_release(std::unique_ptr<PgConn> conn) EXCLUDES(mu_);
  PgLease& lease_;
  ReplicaOptions o_;
  FollowerReads* reads_;
  std::unique_ptr<http::Server> server_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  bool tried_ GUARDED_BY(mu_) = false;  // A try has read the lease.
  uint64_t changes_ GUARDED_BY(mu_) = 0;
  bool released_ GUARDED_BY(mu_) = false;  // A release was notified: try now.
  bool done_ GUARDED_BY(mu_) = false;      // lead() is returning: the listener ends.
  LeaseView view_ GUARDED_BY(mu_);
};

// The leader's renewals, on a thread of its own.
class LeaseKeeper {
 public:
  // `on_lost(why)` is called once, from the keeper's thread, when the lease was lost.
  LeaseKeeper(PgLease& lease, int64_t epoch, ReplicaOptions o, const Clock& clock,
              std::function<void(const std::string&)> on_lost);
  ~LeaseKeeper();  // stop()
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;
  void stop();

 private:
  void loop();
  PgLease& lease_;
  const int64_t epoch_;
  const ReplicaOptions o_;
  const Clock& clock_;
  std::function<void(const std::string&)> on_lost_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tessel::scheduler
