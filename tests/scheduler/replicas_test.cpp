// Replicas on one real PostgreSQL, at the store level: the leader lease (take, renew,
// expire, release), fenced writes of a scheduler that lost it, and a follower's loads
// that read only what changed since its last one.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "db_files.hpp"
#include "replicas_fixture.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(Replicas, LeaseIsTakenRenewedAndTakenOverOnlyOnceExpired) {
  auto a = lease("a"), b = lease("b");
  ASSERT_TRUE(a && b);
  auto va = a->acquire_or_renew(0);
  ASSERT_TRUE(va.ok()) << va.error().message;
  EXPECT_TRUE(va->leader);
  EXPECT_EQ(va->epoch, 1);
  auto vb = b->acquire_or_renew(0);
  ASSERT_TRUE(vb.ok());
  EXPECT_FALSE(vb->leader);
  EXPECT_EQ(vb->epoch, 1);
  EXPECT_EQ(vb->advertise, "http://a");
  EXPECT_TRUE(a->acquire_or_renew(1)->leader);  // Renewal keeps the epoch.
  EXPECT_EQ(a->acquire_or_renew(1)->epoch, 1);
  expire_lease();
  vb = b->acquire_or_renew(0);
  EXPECT_TRUE(vb->leader);
  EXPECT_EQ(vb->epoch, 2);
  va = a->acquire_or_renew(1);  // The old leader's renewal finds the new epoch.
  EXPECT_FALSE(va->leader);
  EXPECT_EQ(va->epoch, 2);
  EXPECT_EQ(va->advertise, "http://b");
  ASSERT_TRUE(b->release(2).ok());  // A clean stop: the next try takes it at once.
  va = a->acquire_or_renew(0);
  EXPECT_TRUE(va->leader);
  EXPECT_EQ(va->epoch, 3);
}

// A leader keeping its lease only renews: when another replica took it over and let
// it expire, the old leader's renewal must not take it again (it steps down instead).
TEST_F(Replicas, ALeadersRenewalNeverTakesAnExpiredLeaseOver) {
  auto a = lease("a"), b = lease("b");
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->acquire_or_renew(0)->epoch, 1);
  expire_lease();
  ASSERT_EQ(b->acquire_or_renew(0)->epoch, 2);
  expire_lease();
  auto va = a->acquire_or_renew(1, /*renew_only=*/true);
  ASSERT_TRUE(va.ok()) << va.error().message;
  EXPECT_FALSE(va->leader);
  EXPECT_EQ(va->epoch, 2);
  EXPECT_EQ(va->advertise, "http://b");
  auto vb = b->acquire_or_renew(2, /*renew_only=*/true);  // Its own, expired or not.
  EXPECT_TRUE(vb->leader);
  EXPECT_EQ(vb->epoch, 2);
}

// A leader paused in the middle of a write (its transaction holds the lease row FOR
// SHARE) does not hold up the takeover: the server ends the idle transaction, the
// waiting replica takes the expired lease, dated from when it wrote it (a lease
// dated from when its statement began waiting would be over at once), and the paused
// leader's transaction is gone.
TEST_F(Replicas, ALeaderPausedMidWriteDoesNotBlockTheTakeover) {
  auto a = lease("a", 1s), b = lease("b", 1s);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->acquire_or_renew(0)->epoch, 1);
  auto paused = PgConn::connect(uri_);
  ASSERT_TRUE(paused.ok()) << paused.error().message;
  ASSERT_TRUE((*paused)->exec(pg_write_begin_sql()).ok());
  ASSERT_TRUE((*paused)->query("SELECT epoch FROM leader WHERE one = 1 FOR SHARE").ok());
  // Blocks on the row lock until the server ends the paused transaction (about 2 s),
  // by when a's 1 s lease is over.
  auto vb = b->acquire_or_renew(0);
  ASSERT_TRUE(vb.ok()) << vb.error().message;
  EXPECT_TRUE(vb->leader);
  EXPECT_EQ(vb->epoch, 2);
  EXPECT_EQ(pg_->psql("replicas", "SELECT expires_at > clock_timestamp() FROM leader"), "t\n");
  EXPECT_FALSE((*paused)->exec("COMMIT").ok());  // Its write cannot land.
}

// A leader whose lease another replica took can no longer commit: its write is
// rolled back and it is told to step down.
TEST_F(Replicas, WritesOfAnOldEpochAreRefused) {
  auto a = lease("a");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->acquire_or_renew(0)->epoch, 1);
  std::atomic<int64_t> fenced{0};
  PgStoreOptions o;
  o.leader_epoch = 1;
  o.on_fenced = [&](int64_t now) { fenced = now; };
  auto store = open_pg_store(uri_, o);
  ASSERT_TRUE(store.ok()) << store.error().message;
  WriteBatch b;
  b.jobs = {test_job(1)};
  ASSERT_TRUE((*store)->write(b).ok());
  expire_lease();
  auto other = lease("b");
  ASSERT_EQ(other->acquire_or_renew(0)->epoch, 2);
  b.jobs = {test_job(2)};
  auto s = (*store)->write(b);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::unavailable);
  EXPECT_NE(s.error().message.find("not the leader any more"), std::string::npos) << s.error().message;
  EXPECT_EQ(fenced, 2);
  auto snap = (*store)->load();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->jobs.size(), 1u);  // Job 2 was rolled back.
}

// A follower's store (read_only) reads only the rows written since its previous load:
// with nothing written it says so (the follower keeps its view); a row changed by hand
// behind the trigger (its `changed` kept) is not read again until a DELETE on its
// table makes the next load read that table in full.
TEST_F(Replicas, FollowerLoadsReadOnlyTheRowsWrittenSinceItsLastLoad) {
  auto writer = open_pg_store(uri_);
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  PgStoreOptions ro;
  ro.read_only = true;
  auto reader = open_pg_store(uri_, ro);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  auto load = [&] {
    auto snap = (*reader)->load();
    EXPECT_TRUE(snap.ok()) << snap.error().message;
    return snap.ok() ? std::move(*snap) : Snapshot{};
  };
  auto names = [](const Snapshot& s) {
    std::vector<std::string> out;
    for (const auto& j : s.jobs) out.push_back(j.id + "=" + j.name);
    return out;
  };
  WriteBatch b;
  b.jobs = {test_job(1), test_job(2), test_job(3)};
  ASSERT_TRUE((*writer)->write(b).ok());
  Snapshot s = load();
  EXPECT_FALSE(s.unchanged);
  ASSERT_EQ(s.jobs.size(), 3u);
  s = load();
  EXPECT_TRUE(s.unchanged);
  EXPECT_EQ(s.jobs.size(), 3u);  // Complete all the same.

  pg_->psql("replicas",
            "ALTER TABLE jobs DISABLE TRIGGER jobs_changed;"
            "UPDATE jobs SET body = replace(body, '\"job-1\"', '\"by-hand\"') WHERE seq = 1;"
            "ALTER TABLE jobs ENABLE TRIGGER jobs_changed");
  s = load();
  EXPECT_TRUE(s.unchanged);
  EXPECT_EQ(s.jobs.at(0).name, "job-1");  // Not read again.

  api::Job two = test_job(2);
  two.name = "renamed";
  b.jobs = {two, test_job(4)};
  ASSERT_TRUE((*writer)->write(b).ok());
  s = load();
  EXPECT_FALSE(s.unchanged);
  EXPECT_EQ(names(s), (std::vector<std::string>{make_job_id(1) + "=job-1", make_job_id(2) + "=renamed",
                                                make_job_id(3) + "=job-3", make_job_id(4) + "=job-4"}));

  b = WriteBatch{};
  b.delete_jobs = {make_job_id(3)};
  ASSERT_TRUE((*writer)->write(b).ok());
  s = load();
  EXPECT_FALSE(s.unchanged);
  EXPECT_EQ(names(s), (std::vector<std::string>{make_job_id(1) + "=by-hand", make_job_id(2) + "=renamed",
                                                make_job_id(4) + "=job-4"}));
  EXPECT_TRUE(load().unchanged);
}

// What the incremental load saves, printed: a follower's loads of 5000 jobs, the first
// (every row), one after nothing was written, one after one job was written, and a
// full load (what each follower load was before).
TEST_F(Replicas, FollowerLoadCostWith5000Jobs) {
  auto writer = open_pg_store(uri_);
  ASSERT_TRUE(writer.ok()) << writer.error().message;
  WriteBatch b;
  for (int i = 1; i <= 5000; ++i) b.jobs.push_back(test_job(i));
  ASSERT_TRUE((*writer)->write(b).ok());
  PgStoreOptions ro;
  ro.read_only = true;
  auto reader = open_pg_store(uri_, ro);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  auto timed = [&](const char* what) {
    const auto t0 = std::chrono::steady_clock::now();
    auto snap = (*reader)->load();
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    EXPECT_TRUE(snap.ok());
    EXPECT_EQ(snap->jobs.size(), 5000u);
    std::cout << "follower load of 5000 jobs, " << what << ": " << us.count() / 1000.0 << " ms\n";
    return snap->unchanged;
  };
  EXPECT_FALSE(timed("first (every row)"));
  EXPECT_TRUE(timed("nothing written since"));
  b.jobs = {test_job(77)};
  ASSERT_TRUE((*writer)->write(b).ok());
  EXPECT_FALSE(timed("one job written since"));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*writer)->load().ok());  // What every follower load cost before.
  std::cout << "full load of 5000 jobs (a leader's start): "
            << std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count() /
                   1000.0
            << " ms\n";
}
}  // namespace
}  // namespace tessel::scheduler::testing
