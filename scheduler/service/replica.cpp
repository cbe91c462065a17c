// Follower (its HTTP server and the wait for the lease) and LeaseKeeper.
#include "tessel/scheduler/replica.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace tessel::scheduler {

namespace {

http::Response json_body(int status, const nlohmann::json& body) { return http::json_response(status, body.dump()); }

}  // namespace

std::string render_replica_metrics(bool leader, int64_t epoch, uint64_t changes) {
  return "# HELP tessel_leader 1 while this replica holds the leader lease, else 0.\n"
         "# TYPE tessel_leader gauge\ntessel_leader " +
         std::string(leader ? "1" : "0") +
         "\n# HELP tessel_leader_epoch The leader lease's epoch as this replica last saw it.\n"
         "# TYPE tessel_leader_epoch gauge\ntessel_leader_epoch " +
         std::to_string(epoch) +
         "\n# HELP tessel_leader_changes_total Changes of leader this replica has seen since it started (its own "
         "takeover included).\n# TYPE tessel_leader_changes_total counter\ntessel_leader_changes_total " +
         std::to_string(changes) + "\n";
}

Status Follower::start(http::ServerOptions so) {
  http::Router r;
  // Its own metrics: a scrape of each replica must not be redirected to the leader's.
  r.add("GET", "/metrics", [this](http::Request&, const http::Reply& reply) {
    MutexLock lk(mu_);
    http::Response res;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = render_replica_metrics(false, view_.epoch, changes_);
    reply(std::move(res));
  });
  r.add("GET", "/healthz", [this](http::Request&, const http::Reply& reply) {
    MutexLock lk(mu_);
    nlohmann::json body = {{"ok", true}, {"role", "follower"}, {"epoch", view_.epoch}};
    if (!view_.advertise.empty()) body["leader"] = view_.advertise;
    reply(json_body(200, body));
  });
  if (reads_) reads_->add_routes(r);
  // Everything else is the leader's: 307 keeps the method and body.
  r.set_fallback([this](http::Request& req, const http::Reply& reply) {
    std::string leader;
    {
      MutexLock lk(mu_);
      leader = view_.advertise;
    }
    if (leader.empty()) {
      reply(Error::unavailable("this scheduler is a follower and no leader is known yet"));
      return;
    }
    while (!leader.empty() && leader.back() == '/') leader.pop_back();
    http::Response res = json_body(
        307,
        {{"error", {{"code", "unavailable"}, {"message", "this scheduler is a follower; the leader is " + leader}}}});
    res.headers.push_back({"Location", leader + req.target});
    res.headers.push_back({kRoleHeader, "follower"});
    reply(std::move(res));
  });
  so.name = "follower http";
  server_ = std::make_unique<http::Server>(so, std::move(r));
  auto port = server_->start();
  if (!port) return port.error();
  return ok_status();
}

void Follower::listen_for_release(std::unique_ptr<PgConn> conn) {
  for (;;) {
    {
      MutexLock lk(mu_);
      if (stop_ || done_) return;
    }
    if (!conn) {
      auto c = lease_.listen_for_release();
      if (!c) {
        spdlog::debug("leader lease: {}", c.error().message);
        MutexLock lk(mu_);
        cv_.wait_for(mu_, o_.renew, [&]() REQUIRES(mu_) { return stop_ || done_; });
        continue;
      }
      conn = std::move(*c);
    }
    // Short waits: stop() and lead()'s return are seen within this long.
    auto got = conn->wait_notification(100);
    if (!got) {
      conn.reset();
      continue;
    }
    if (*got) {
      {
        MutexLock lk(mu_);
        released_ = true;
      }
      cv_.notify_all();
    }
  }
}

int64_t Follower::lead(const std::function<void(const LeaseView&)>& after_try) {
  // LISTEN before the first try: once this replica has answered as a follower, a
  // release the leader announces is heard (not found at the next try, o_.renew later).
  std::unique_ptr<PgConn> listening;
  if (auto c = lease_.listen_for_release())
    listening = std::move(*c);
  else
    spdlog::debug("leader lease: {}", c.error().message);
  std::thread listener([this, conn = std::move(listening)]() mutable { listen_for_release(std::move(conn)); });
  int64_t epoch = 0;
  for (;;) {
    auto v = lease_.acquire_or_renew(0);
    if (!v) spdlog::warn("leader lease: {}", v.error().message);
    LeaseView seen;
    {
      MutexLock lk(mu_);
      if (v) {
        if (v->epoch != view_.epoch) {
          spdlog::info("leader lease: epoch {}, leader {}", v->epoch, v->advertise);
          if (tried_ || v->leader) ++changes_;
        }
        tried_ = true;
        view_ = *v;
      }
      seen = view_;
    }
    if (after_try) after_try(seen);
    if (v && v->leader) {
      epoch = v->epoch;
      break;
    }
    MutexLock lk(mu_);
    cv_.wait_for(mu_, o_.renew, [&]() REQUIRES(mu_) { return stop_ || released_; });
    if (stop_) break;
    released_ = false;
  }
  {
    MutexLock lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
  listener.join();
  if (server_) server_->stop();
  return epoch;
}

uint64_t Follower::leader_changes() const {
  MutexLock lk(mu_);
  return changes_;
}

void Follower::stop() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

LeaseKeeper::LeaseKeeper(PgLease& lease, int64_t epoch, ReplicaOptions o, const Clock& clock,
                         std::function<void(const std::string&)> on_lost)
    : lease_(lease), epoch_(epoch), o_(o), clock_(clock), on_lost_(std::move(on_lost)) {
  thread_ = std::thread([this] { loop(); });
}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::stop() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::loop() {
  int64_t renewed_ns = clock_.steady_ns();
  for (;;) {
    {
      MutexLock lk(mu_);
      if (cv_.wait_for(mu_, o_.renew, [&]() REQUIRES(mu_) { return stop_; })) return;
    }
    // Renew only: a leader that lost its lease steps down and reloads, so it must not
    // take an expired lease over again (a new epoch it would then give up at once).
    auto v = lease_.acquire_or_renew(epoch_, /*renew_only=*/true);
    std::string lost;
    if (v && v->leader && v->epoch == epoch_) {
      renewed_ns = clock_.steady_ns();
      continue;
    }
    if (v) {
      lost = "another replica leads (epoch " + std::to_string(v->epoch) + ", " + v->advertise + ")";
    } else {
      spdlog::warn("leader lease: {}", v.error().message);
      const auto since = std::chrono::nanoseconds(clock_.steady_ns() - renewed_ns);
      if (since < o_.lease) continue;
      lost = "not renewed for " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(since).count()) +
             " ms (" + v.error().message + ")";
    }
    on_lost_(lost);
    return;
  }
}

}  // namespace tessel::scheduler
