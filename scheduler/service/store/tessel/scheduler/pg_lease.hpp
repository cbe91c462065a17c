#pragma once
// The leader lease of scheduler replicas sharing one PostgreSQL database: one row of
// the `leader` table (holder, the leader's advertised URL, epoch, expires_at). Times
// are the database's clock (now()), so the replicas' clocks do not matter. The epoch
// grows at every change of holder; the leader's PgStore checks it in every write
// transaction (PgStoreOptions::leader_epoch), so a paused or cut-off old leader can
// never commit once another replica took over.
// Not thread-safe: one owner thread per PgLease.

#include <chrono>
#include <memory>
#include <string>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/pg_conn.hpp"

namespace tessel::scheduler {

struct LeaseView {
  bool leader = false;    // This holder holds the lease.
  int64_t epoch = 0;      // The lease's epoch now (0: never held by anyone).
  std::string advertise;  // The holder's URL ("" when nobody ever held it).
};

struct LeaseOptions {
  std::string holder;     // Unique per process (host, pid, random).
  std::string advertise;  // This replica's URL, shown to followers' clients.
  std::chrono::milliseconds length{3000};
};

class PgLease {
 public:
  // Connects and brings the schema up to date (the lease table included).
  static Result<std::unique_ptr<PgLease>> open(const std::string& uri, LeaseOptions o);

  // One statement: renews the lease when this holder holds `epoch`, takes it (epoch
  // + 1) when it has expired (unless `renew_only`: a leader keeping its lease), else
  // leaves it; returns the view after. Times are the database's clock at the moment
  // the row is written. A lost connection is made again at the next call.
  Result<LeaseView> acquire_or_renew(int64_t epoch, bool renew_only = false);
  // Clean shutdown: expires the lease now if this holder holds `epoch` and notifies
  // kReleaseChannel, so a follower listening there (listen_for_release) tries the lease
  // at once instead of at its next try.
  Status release(int64_t epoch);
  // A new connection that LISTENs on kReleaseChannel (wait on it with
  // PgConn::wait_notification). Safe from any thread: it uses no state of this object
  // but the URI.
  Result<std::unique_ptr<PgConn>> listen_for_release() const;
  static constexpr const char* kReleaseChannel = "tessel_leader_released";

 private:
  PgLease(std::string uri, LeaseOptions o, std::unique_ptr<PgConn> c)
      : uri_(std::move(uri)), o_(std::move(o)), conn_(std::move(c)) {}
  Status ensure_connected();
  std::string uri_;
  LeaseOptions o_;
  std::unique_ptr<PgConn> conn_;  // Null while lost.
};

// Brings a PostgreSQL database's schema to the newest version (pg_store.cpp).
Status pg_migrate(PgConn& c);

}  // namespace tessel::scheduler
