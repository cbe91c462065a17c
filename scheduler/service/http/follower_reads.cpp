#include "tessel/scheduler/follower_reads.hpp"

#include <spdlog/spdlog.h>

#include "tessel/scheduler/http_util.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {

// The paths a follower answers itself (all GET).
const char* const kReadPaths[] = {"/v1/jobs", "/v1/jobs/{id}", "/v1/nodes", "/v1/nodes/{name}", "/v1/inventory"};

// One loaded snapshot as a Store: what a view's ClusterState restores from. Its
// writes (restore() may cancel jobs whose dependencies can never be met) change
// nothing anywhere: the view is thrown away at the next load, and the leader makes
// the same change in the database.
class SnapshotStore final : public Store {
 public:
  explicit SnapshotStore(Snapshot snap) : snap_(std::move(snap)) {}
  Status write(const WriteBatch&) override { return ok_status(); }
  Result<Snapshot> load() override { return std::move(snap_); }

 private:
  Snapshot snap_;
};

}  // namespace

struct FollowerReads::View {
  View(Snapshot snap, const Clock& clock, const std::optional<TokenTable>& tokens)
      : store(std::move(snap)), state(store, clock, quiet()), auth(tokens), ctx{state,   auth, nullptr,
                                                                                nullptr, 0,    nullptr} {}
  static StateOptions quiet() {
    StateOptions o;
    o.quiet_restore = true;
    return o;
  }
  SnapshotStore store;
  ClusterState state;
  Authenticator auth;
  RouteContext ctx;
  http::Router router;  // The leader's job and node routes over `ctx`; only its reads are used.
};

FollowerReads::FollowerReads(Store& store, const Clock& clock, std::optional<TokenTable> tokens,
                             std::chrono::milliseconds max_age)
    : store_(store), clock_(clock), tokens_(std::move(tokens)), max_age_(max_age) {}

FollowerReads::~FollowerReads() = default;

Result<std::shared_ptr<FollowerReads::View>> FollowerReads::view() {
  const auto fresh = [&]() REQUIRES(mu_) {
    return view_ && clock_.steady_ns() - loaded_ns_ <= std::chrono::nanoseconds(max_age_).count();
  };
  {
    MutexLock lk(mu_);
    if (fresh()) return view_;
  }
  MutexLock load(load_mu_);
  {
    MutexLock lk(mu_);
    if (fresh()) return view_;  // Another request loaded it meanwhile.
  }
  const int64_t began = clock_.steady_ns();
  auto snap = store_.load();
  if (!snap) return snap.error().wrap("reading the database");
  {
    MutexLock lk(mu_);
    if (view_ && snap->unchanged) {  // The store read nothing new: the view stands.
      loaded_ns_ = began;
      return view_;
    }
  }
  const size_t jobs = snap->jobs.size(), nodes = snap->nodes.size();
  auto v = std::make_shared<View>(std::move(*snap), clock_, tokens_);
  if (auto s = v->state.restore(); !s) return s.error();
  add_job_routes(v->router, v->ctx);
  add_node_routes(v->router, v->ctx);
  spdlog::debug("follower view: {} jobs, {} nodes, loaded in {} ms", jobs, nodes,
                (clock_.steady_ns() - began) / 1'000'000);
  MutexLock lk(mu_);
  view_ = std::move(v);
  loaded_ns_ = began;
  return view_;
}

void FollowerReads::serve(http::Request& req, const http::Reply& reply) {
  http::Reply tagged = reply;
  tagged.add_header({kRoleHeader, "follower"});
  auto v = view();
  if (!v) {
    spdlog::warn("follower read {}: {}", req.path, v.error().message);
    return tagged(Error::unavailable(v.error().message));
  }
  const http::Router::Route* route = nullptr;
  std::vector<std::string> captures;
  if ((*v)->router.match(req.method, req.path, &route, captures) != http::Router::Match::found)
    return tagged(Error::internal("follower read " + req.path + ": no route"));
  req.captures = std::move(captures);
  route->handler(req, tagged);  // The read routes answer before they return: *v outlives the call.
}

void FollowerReads::add_routes(http::Router& r) {
  for (const char* path : kReadPaths)
    r.add(
        "GET", path, [this](http::Request& req, const http::Reply& reply) { serve(req, reply); }, http::Exec::blocking);
}

}  // namespace tessel::scheduler
