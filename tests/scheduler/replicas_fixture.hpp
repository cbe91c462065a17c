#pragma once
// Replicas: a real PostgreSQL (from Debian's packages, in a temp dir) with one database
// for the replica tests, and leases on it. Skips when PostgreSQL's tools are missing.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "postgres_server.hpp"
#include "tessel/scheduler/pg_lease.hpp"

namespace tessel::scheduler::testing {

class Replicas : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testkit::PostgresServer::find_bindir()) GTEST_SKIP() << testkit::PostgresServer::skip_reason();
    pg_ = std::make_unique<testkit::PostgresServer>(/*fsync=*/false);
    uri_ = pg_->create_database("replicas");
  }
  std::unique_ptr<PgLease> lease(const std::string& holder,
                                 std::chrono::milliseconds length = std::chrono::seconds(3)) {
    auto l = PgLease::open(uri_, LeaseOptions{holder, "http://" + holder, length});
    EXPECT_TRUE(l.ok()) << l.error().message;
    return l.ok() ? std::move(*l) : nullptr;
  }
  void expire_lease() { pg_->psql("replicas", "UPDATE leader SET expires_at = now() - interval '1 second'"); }
  std::unique_ptr<testkit::PostgresServer> pg_;
  std::string uri_;
};

}  // namespace tessel::scheduler::testing
