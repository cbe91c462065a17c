// PgLease: acquiring, renewing and releasing the leader row in single statements.
#include "tessel/scheduler/pg_lease.hpp"

namespace tessel::scheduler {

Result<std::unique_ptr<PgLease>> PgLease::open(const std::string& uri, LeaseOptions o) {
  auto c = PgConn::connect(uri);
  if (!c) return c.error();
  if (auto s = pg_migrate(**c); !s) return s.error().wrap("opening " + redact_db(uri));
  return std::unique_ptr<PgLease>(new PgLease(uri, std::move(o), std::move(*c)));
}

Status PgLease::ensure_connected() {
  if (conn_ && !conn_->broken()) return ok_status();
  conn_.reset();
  auto c = PgConn::connect(uri_);
  if (!c) return c.error();
  conn_ = std::move(*c);
  return ok_status();
}

Result<LeaseView> PgLease::acquire_or_renew(int64_t epoch, bool renew_only) {
  if (auto s = ensure_connected(); !s) return s.error();
  // Renew: the row names this holder with this epoch (it expired or not: nobody else
  // took it meanwhile, so nobody else committed). Take over: it expired; the epoch
  // grows. The row lock makes this wait for a leader's write transaction in flight
  // (it holds the row FOR SHARE), so that commit comes before the new epoch.
  // clock_timestamp(), not now(): now() is when this statement's transaction began,
  // before any wait for that lock, and a lease dated then could be over at once.
  auto r = conn_->query(
      "INSERT INTO leader AS l (one, holder, advertise, epoch, expires_at) "
      "VALUES (1, $1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond') "
      "ON CONFLICT (one) DO UPDATE SET holder = excluded.holder, advertise = excluded.advertise, "
      "  epoch = CASE WHEN l.holder = excluded.holder AND l.epoch = $4 THEN l.epoch ELSE l.epoch + 1 END, "
      "  expires_at = clock_timestamp() + $3 * interval '1 millisecond' "
      "WHERE (l.holder = excluded.holder AND l.epoch = $4) OR (NOT $5 AND l.expires_at < clock_timestamp()) "
      "RETURNING epoch",
      {o_.holder, o_.advertise, std::to_string(o_.length.count()), std::to_string(epoch),
       renew_only ? "true" : "false"});
  if (!r) {
    if (conn_->broken()) conn_.reset();
    return r.error().wrap("renewing the leader lease");
  }
  if (r->size() == 1) return LeaseView{true, std::stoll(r->text(0, 0)), o_.advertise};
  auto v = conn_->query("SELECT epoch, advertise FROM leader WHERE one = 1");
  if (!v) {
    if (conn_->broken()) conn_.reset();
    return v.error().wrap("reading the leader lease");
  }
  if (v->size() != 1) return LeaseView{};
  return LeaseView{false, std::stoll(v->text(0, 0)), v->text(0, 1)};
}

Status PgLease::release(int64_t epoch) {
  if (auto s = ensure_connected(); !s) return s;
  auto r = conn_->query(
      "UPDATE leader SET expires_at = clock_timestamp() - interval '1 second' WHERE holder = $1 AND epoch = $2",
      {o_.holder, std::to_string(epoch)});
  if (!r) return r.error().wrap("releasing the leader lease");
  if (auto s = conn_->exec(std::string("NOTIFY ") + kReleaseChannel); !s)
    return s.error().wrap("telling followers of the release");
  return ok_status();
}

Result<std::unique_ptr<PgConn>> PgLease::listen_for_release() const {
  auto c = PgConn::connect(uri_);
  if (!c) return c.error();
  if (auto s = (*c)->exec(std::string("LISTEN ") + kReleaseChannel); !s)
    return s.error().wrap("listening for releases");
  return std::move(*c);
}

}  // namespace tessel::scheduler
