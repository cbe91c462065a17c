// The same Store cases on SQLite (a temp file) and on a real PostgreSQL (a server
// from Debian's packages in a temp dir; skipped with a message when absent): round
// trips of every record kind (array elements included), upserts and deletes, group commit under concurrent
// writers, reopening, migrations run twice. Then what only PostgreSQL has: the
// server going away and coming back, a schema newer than the binary, URIs in logs.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "db_files.hpp"
#include "eventually.hpp"
#include "postgres_server.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/pg_conn.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler::testing {
namespace {

// One server per test process (ctest runs each case in its own), fsync off: these
// cases are about the store's semantics, not the disk's.
testkit::PostgresServer* shared_postgres() {
  static std::unique_ptr<testkit::PostgresServer> server = [] {
    if (!testkit::PostgresServer::find_bindir()) return std::unique_ptr<testkit::PostgresServer>();
    return std::make_unique<testkit::PostgresServer>(/*fsync=*/false);
  }();
  return server.get();
}

// Where a store lives: open() may be called again for the same database.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual Result<std::unique_ptr<Store>> open() = 0;
};

class SqliteBackend final : public StoreBackend {
 public:
  Result<std::unique_ptr<Store>> open() override { return open_sqlite_store(dir_.str("s.db")); }

 private:
  testkit::TempDir dir_{"tessel-store"};
};

class PgBackend final : public StoreBackend {
 public:
  explicit PgBackend(std::string uri) : uri_(std::move(uri)) {}
  Result<std::unique_ptr<Store>> open() override { return open_pg_store(uri_); }

 private:
  std::string uri_;
};

struct Sqlite {
  static std::unique_ptr<StoreBackend> make() { return std::make_unique<SqliteBackend>(); }
};
struct Postgres {
  static std::unique_ptr<StoreBackend> make() {
    static int n = 0;
    auto* pg = shared_postgres();
    if (pg == nullptr) return nullptr;
    return std::make_unique<PgBackend>(pg->create_database("store_" + std::to_string(n++)));
  }
};

template <class B>
class StoreConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = B::make();
    if (!backend_) GTEST_SKIP() << testkit::PostgresServer::skip_reason();
    store_ = open();
  }
  std::unique_ptr<Store> open() {
    auto s = backend_->open();
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(*s) : nullptr;
  }
  Snapshot load() {
    auto snap = store_->load();
    EXPECT_TRUE(snap.ok()) << snap.error().message;
    return snap.ok() ? std::move(*snap) : Snapshot{};
  }
  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<Store> store_;
};

using Backends = ::testing::Types<Sqlite, Postgres>;
TYPED_TEST_SUITE(StoreConformance, Backends);

NodeRecord test_node(const std::string& name) {
  NodeRecord n;
  n.name = name;
  n.address = "10.0.0." + std::to_string(name.size());
  n.agent_port = 7451;
  n.inventory.driver_version = "1.18.0";
  n.last_heartbeat_ms = 1'700'000'000'000;
  n.scheduler_key = "key-" + name;
  n.labels = {{"rack", "r7"}};              // Admins' (issue 32).
  n.inventory.labels = {{"fabric", "ib"}};  // The agent's.
  return n;
}

Fence test_fence(const std::string& id, const std::string& job) {
  Fence f;
  f.id = id;
  f.job_id = job;
  f.allocation.node = "n1";
  f.allocation.module_ids = {0, 1};
  f.allocation.indices = {0, 1};
  return f;
}

std::vector<std::string> ids(const Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& j : s.jobs) out.push_back(j.id);
  return out;
}

TYPED_TEST(StoreConformance, WritesAndLoadsEveryKind) {
  ASSERT_TRUE(this->store_);
  WriteBatch b;
  b.jobs = {test_job(2), test_job(1), test_job(10)};
  b.jobs[0].state = api::JobState::running;
  b.jobs[0].allocations = {test_fence("a", "j").allocation};
  b.nodes = {test_node("n2"), test_node("n1")};
  b.put_fences = {test_fence("f-1", make_job_id(2))};
  ASSERT_TRUE(this->store_->write(b).ok());
  Snapshot s = this->load();
  EXPECT_EQ(ids(s), (std::vector<std::string>{make_job_id(1), make_job_id(2), make_job_id(10)}));  // Ascending seq.
  ASSERT_EQ(s.jobs.size(), 3u);
  EXPECT_EQ(api::to_json(s.jobs[1]), api::to_json(b.jobs[0]));
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].name, "n1");
  EXPECT_EQ(node_record_to_json(s.nodes[1]), node_record_to_json(b.nodes[0]));
  EXPECT_EQ(s.nodes[0].labels, b.nodes[1].labels);
  EXPECT_EQ(s.nodes[0].inventory.labels, b.nodes[1].inventory.labels);
  ASSERT_EQ(s.fences.size(), 1u);
  EXPECT_EQ(fence_to_json(s.fences[0]), fence_to_json(b.put_fences[0]));
}

// Reservations (issue 32): upserted and deleted by name, loaded in ascending name.
TYPED_TEST(StoreConformance, ReservationsWriteLoadAndDelete) {
  ASSERT_TRUE(this->store_);
  api::Reservation demo;
  demo.name = "demo";
  demo.nodes = {"n1", "n2"};
  demo.start_ms = 1'800'000'000'000;
  demo.end_ms = demo.start_ms + 3'600'000;
  demo.users = {"alice"};
  demo.projects = {"vision"};
  demo.created_by = "root";
  demo.created_at_ms = demo.start_ms - 1000;
  api::Reservation fix = demo;
  fix.name = "fix";
  fix.nodes = {"n3"};
  fix.count = 1;
  fix.node_selector = {{"rack", "r7"}};
  fix.users.clear();
  fix.projects.clear();
  fix.maintenance = true;
  WriteBatch b;
  b.put_reservations = {fix, demo};
  ASSERT_TRUE(this->store_->write(b).ok());
  Snapshot s = this->load();
  ASSERT_EQ(s.reservations.size(), 2u);
  EXPECT_EQ(s.reservations[0], demo);
  EXPECT_EQ(s.reservations[1], fix);
  WriteBatch del;
  demo.end_ms += 1000;
  del.put_reservations = {demo};
  del.delete_reservations = {"fix", "never-there"};
  ASSERT_TRUE(this->store_->write(del).ok());
  s = this->load();
  ASSERT_EQ(s.reservations.size(), 1u);
  EXPECT_EQ(s.reservations[0], demo);
}

TYPED_TEST(StoreConformance, UpsertsAndDeletes) {
  ASSERT_TRUE(this->store_);
  WriteBatch first;
  first.jobs = {test_job(1)};
  first.nodes = {test_node("n1"), test_node("n2")};
  first.put_fences = {test_fence("f-1", make_job_id(1)), test_fence("f-2", make_job_id(1))};
  ASSERT_TRUE(this->store_->write(first).ok());
  WriteBatch second;
  second.jobs = {test_job(1)};
  second.jobs[0].state = api::JobState::succeeded;
  second.jobs[0].exit_code = 0;
  second.nodes = {test_node("n1")};
  second.nodes[0].drained = true;
  second.delete_nodes = {"n2", "never-there"};
  second.delete_fences = {"f-1"};
  ASSERT_TRUE(this->store_->write(second).ok());
  // A node put and deleted in one batch is gone: deletes apply after puts.
  WriteBatch third;
  third.nodes = {test_node("n3")};
  third.delete_nodes = {"n3"};
  ASSERT_TRUE(this->store_->write(third).ok());
  Snapshot s = this->load();
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].state, api::JobState::succeeded);
  EXPECT_EQ(s.jobs[0].exit_code, 0);
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].name, "n1");
  EXPECT_TRUE(s.nodes[0].drained);
  ASSERT_EQ(s.fences.size(), 1u);
  EXPECT_EQ(s.fences[0].id, "f-2");
}

// Projects: upserted and deleted by name, loaded in ascending name.
TYPED_TEST(StoreConformance, ProjectsRoundTripUpsertAndDelete) {
  ASSERT_TRUE(this->store_);
  api::Project vision{"vision", 3, {}};
  vision.quotas["HL-225"] = api::Quota{8, 16};
  api::Project audio{"audio", 1, {}};
  api::Project gone{"gone", 2, {}};
  WriteBatch first;
  first.put_projects = {vision, gone, audio};
  ASSERT_TRUE(this->store_->write(first).ok());
  WriteBatch second;
  vision.shares = 5;
  second.put_projects = {vision};
  second.delete_projects = {"gone", "never-there"};
  ASSERT_TRUE(this->store_->write(second).ok());
  Snapshot s = this->load();
  ASSERT_EQ(s.projects.size(), 2u);
  EXPECT_EQ(s.projects[0], audio);
  EXPECT_EQ(s.projects[1], vision);
}

// Node tokens (hashes of admin-issued agent tokens): upserted by node (a rotation
// replaces the hash), deleted by node, loaded in ascending node, kept across a reopen.
TYPED_TEST(StoreConformance, NodeTokensRoundTripRotateAndRevoke) {
  ASSERT_TRUE(this->store_);
  const NodeToken n2{"n2", std::string(64, 'a'), 1'000};
  const NodeToken n1{"n1", std::string(64, 'b'), 2'000};
  const NodeToken n3{"n3", std::string(64, 'c'), 3'000};
  WriteBatch first;
  first.put_node_tokens = {n2, n1, n3};
  ASSERT_TRUE(this->store_->write(first).ok());
  const NodeToken rotated{"n1", std::string(64, 'd'), 4'000};
  WriteBatch second;
  second.put_node_tokens = {rotated};
  second.delete_node_tokens = {"n3", "never-there"};
  ASSERT_TRUE(this->store_->write(second).ok());
  this->store_.reset();
  this->store_ = this->open();
  ASSERT_TRUE(this->store_);
  Snapshot s = this->load();
  EXPECT_EQ(s.node_tokens, (std::vector<NodeToken>{rotated, n2}));
}

// Usage records: upserted by key (job and attempt), loaded in ascending key, and kept
// when their job is deleted (pruned) in the same or a later batch.
TYPED_TEST(StoreConformance, UsageRecordsOutliveTheirPrunedJobs) {
  ASSERT_TRUE(this->store_);
  UsageRecord a0{make_job_id(1), 0, "vision", "alice", {{"HL-225", 4}}, 1'000, 61'000};
  UsageRecord a1{make_job_id(1), 1, "vision", "alice", {{"HL-225", 2}, {"HL-325", 2}}, 70'000, 90'000};
  UsageRecord b0{make_job_id(2), 0, "default", "bob", {{"HL-225", 1}}, 5'000, 6'000};
  WriteBatch first;
  first.jobs = {test_job(1), test_job(2), test_job(3)};
  first.put_usage = {b0, a1, a0};
  ASSERT_TRUE(this->store_->write(first).ok());
  WriteBatch second;
  second.jobs = {test_job(3)};
  second.delete_jobs = {make_job_id(1), make_job_id(3), make_job_id(99)};  // Deletes apply after puts.
  second.put_usage = {a0};                                                 // Written again: still one.
  ASSERT_TRUE(this->store_->write(second).ok());
  Snapshot s = this->load();
  EXPECT_EQ(ids(s), (std::vector<std::string>{make_job_id(2)}));
  EXPECT_EQ(s.usage, (std::vector<UsageRecord>{a0, a1, b0}));
  this->store_.reset();
  this->store_ = this->open();
  ASSERT_TRUE(this->store_);
  EXPECT_EQ(this->load().usage, (std::vector<UsageRecord>{a0, a1, b0}));
}

// Array elements ("j-00000002_7") are stored under negative keys (-job_key(id)):
// they round trip beside plain jobs, with their index lists, and upsert and delete
// by id like any job; reopening finds them again.
TYPED_TEST(StoreConformance, ArrayElementsRoundTripBesidePlainJobs) {
  ASSERT_TRUE(this->store_);
  api::Job parent = test_job(2);
  parent.spec.array = api::ArraySpec{4, 2, "0,5,20-9999:9979"};
  WriteBatch first;
  first.jobs = {test_job(1), parent, test_job(3)};
  const std::vector<int> indices = api::array_indices(*parent.spec.array);
  ASSERT_EQ(indices, (std::vector<int>{0, 5, 20, 9999}));
  for (int i : indices) {
    first.jobs.push_back(parent);
    first.jobs.back().id = api::array_element_id(parent.id, i);
  }
  ASSERT_TRUE(this->store_->write(first).ok());
  WriteBatch second;
  second.jobs = {first.jobs[4]};  // Element 5 ends: an upsert under its key.
  second.jobs[0].state = api::JobState::succeeded;
  second.jobs[0].exit_code = 0;
  second.delete_jobs = {api::array_element_id(parent.id, 0)};
  ASSERT_TRUE(this->store_->write(second).ok());
  for (int reopen = 0; reopen < 2; ++reopen) {
    Snapshot s = this->load();
    std::map<std::string, api::Job> by_id;
    for (const auto& j : s.jobs) by_id[j.id] = j;
    ASSERT_EQ(by_id.size(), s.jobs.size()) << "an id loaded twice";
    std::vector<std::string> want = {make_job_id(1),         make_job_id(2),        make_job_id(3),
                                     make_job_id(2) + "_20", make_job_id(2) + "_5", make_job_id(2) + "_9999"};
    std::sort(want.begin(), want.end());
    std::vector<std::string> got;
    for (const auto& [id, _] : by_id) got.push_back(id);
    EXPECT_EQ(got, want) << "reopen " << reopen;
    for (int i : {5, 20, 9999}) {
      const api::Job& e = by_id[api::array_element_id(parent.id, i)];
      EXPECT_EQ(e.spec.array, parent.spec.array) << i;
      EXPECT_EQ(job_key(e.id), key_of_seq(2) + i + 1) << i;
    }
    EXPECT_EQ(by_id[make_job_id(2) + "_5"].state, api::JobState::succeeded);
    EXPECT_EQ(by_id[make_job_id(2) + "_5"].exit_code, 0);
    EXPECT_EQ(by_id[make_job_id(2) + "_20"].state, api::JobState::pending);
    EXPECT_EQ(api::to_json(by_id[make_job_id(2)]), api::to_json(parent));
    EXPECT_EQ(api::to_json(by_id[make_job_id(3)]), api::to_json(test_job(3)));
    this->store_.reset();
    this->store_ = this->open();
    ASSERT_TRUE(this->store_);
  }
}

// 16 writers at once, each waiting for its own acknowledgement: every acknowledged
// job is there (the writer groups them into shared transactions).
TYPED_TEST(StoreConformance, ConcurrentWritersAreAllDurable) {
  ASSERT_TRUE(this->store_);
  constexpr int kWriters = 16, kEach = 25;
  std::atomic<int> failed{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        WriteBatch b;
        b.jobs = {test_job(1 + w * kEach + i)};
        if (!this->store_->write(b).ok()) ++failed;
      }
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(failed, 0);
  Snapshot s = this->load();
  ASSERT_EQ(s.jobs.size(), static_cast<size_t>(kWriters * kEach));
  for (size_t i = 0; i < s.jobs.size(); ++i) EXPECT_EQ(s.jobs[i].id, make_job_id(static_cast<int64_t>(i) + 1));
}

TYPED_TEST(StoreConformance, ReopenKeepsDataAndMigrationsRunOnce) {
  ASSERT_TRUE(this->store_);
  WriteBatch b;
  b.jobs = {test_job(1), test_job(2)};
  b.nodes = {test_node("n1")};
  ASSERT_TRUE(this->store_->write(b).ok());
  for (int reopen = 0; reopen < 2; ++reopen) {
    this->store_.reset();
    this->store_ = this->open();  // Migrations again, on an up-to-date schema: nothing to do.
    ASSERT_TRUE(this->store_);
    Snapshot s = this->load();
    EXPECT_EQ(ids(s), (std::vector<std::string>{make_job_id(1), make_job_id(2)}));
    EXPECT_EQ(s.nodes.size(), 1u);
  }
  WriteBatch more;
  more.jobs = {test_job(3)};
  ASSERT_TRUE(this->store_->write(more).ok());
  EXPECT_EQ(this->load().jobs.size(), 3u);
}

TYPED_TEST(StoreConformance, EmptyBatchAndEmptyStore) {
  ASSERT_TRUE(this->store_);
  EXPECT_TRUE(this->store_->write(WriteBatch{}).ok());
  Snapshot s = this->load();
  EXPECT_TRUE(s.jobs.empty());
  EXPECT_TRUE(s.nodes.empty());
  EXPECT_TRUE(s.fences.empty());
}

// What only PostgreSQL has.
class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pg_ = shared_postgres();
    if (pg_ == nullptr) GTEST_SKIP() << testkit::PostgresServer::skip_reason();
  }
  testkit::PostgresServer* pg_ = nullptr;
};

// One scheduler per database, as with SQLite's lock file: a second store on the same
// database is refused while the first is open, and opens once it is closed.
TEST_F(PgStoreTest, SecondStoreOnOneDatabaseIsRefused) {
  const std::string uri = pg_->create_database("second");
  auto first = open_pg_store(uri);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = open_pg_store(uri);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("is in use by another tessel-scheduler"), std::string::npos)
      << second.error().message;
  first = Error{"closed"};
  auto third = open_pg_store(uri);
  EXPECT_TRUE(third.ok()) << third.error().message;
  // Records, lease, projects, usage, node tokens, followers' incremental loads.
  EXPECT_EQ(pg_->psql("second", "SELECT version FROM schema_version"), "7\n");
}

TEST_F(PgStoreTest, RefusesASchemaNewerThanTheBinary) {
  const std::string uri = pg_->create_database("newer_schema");
  ASSERT_TRUE(open_pg_store(uri).ok());
  pg_->psql("newer_schema", "UPDATE schema_version SET version = 99");
  auto store = open_pg_store(uri);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("schema version 99 is newer than this binary"), std::string::npos)
      << store.error().message;
}

// The database restarts under a running store: writes fail (503 at the API) while
// it is down and succeed again once it is back, on a connection the store made
// again by itself.
TEST_F(PgStoreTest, WritesFailWhileTheDatabaseIsDownAndRecover) {
  const std::string uri = pg_->create_database("restart");
  auto store = open_pg_store(uri);
  ASSERT_TRUE(store.ok()) << store.error().message;
  WriteBatch b;
  b.jobs = {test_job(1)};
  ASSERT_TRUE((*store)->write(b).ok());
  pg_->stop();
  b.jobs = {test_job(2)};
  auto down = (*store)->write(b);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, ErrorCode::unavailable) << down.error().message;
  EXPECT_FALSE((*store)->load().ok());
  pg_->start();
  b.jobs = {test_job(3)};
  EXPECT_TRUE(testkit::eventually([&] { return (*store)->write(b).ok(); }, std::chrono::seconds(20)));
  auto snap = (*store)->load();
  ASSERT_TRUE(snap.ok()) << snap.error().message;
  EXPECT_EQ(ids(*snap), (std::vector<std::string>{make_job_id(1), make_job_id(3)}));
}

TEST_F(PgStoreTest, UnreachableDatabaseIsAnErrorWithoutThePassword) {
  auto store = open_pg_store("postgresql://tessel:s3cret@127.0.0.1:1/nowhere");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().message.find("s3cret"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("postgresql://tessel:***@127.0.0.1:1/nowhere"), std::string::npos)
      << store.error().message;
}

TEST(RedactDb, HidesPasswordsOnly) {
  EXPECT_EQ(redact_db("postgresql://u:pw@h:5432/db"), "postgresql://u:***@h:5432/db");
  EXPECT_EQ(redact_db("postgres://u:p%40w@h/db?sslmode=require"), "postgres://u:***@h/db?sslmode=require");
  EXPECT_EQ(redact_db("postgresql://u@h/db?password=pw&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(redact_db("postgresql://h/db"), "postgresql://h/db");
  EXPECT_EQ(redact_db("postgresql://u:pw@h1:5432,h2:5432/db"), "postgresql://u:***@h1:5432,h2:5432/db");
  EXPECT_EQ(redact_db("/var/lib/tessel/s:b@d.db"), "/var/lib/tessel/s:b@d.db");  // A file: as it is.
  EXPECT_TRUE(is_postgres_uri("postgres://h/db"));
  EXPECT_TRUE(is_postgres_uri("postgresql://h/db"));
  EXPECT_FALSE(is_postgres_uri("./tessel-scheduler.db"));
  EXPECT_FALSE(is_postgres_uri(":memory:"));
}

// A record the store cannot read back is a damaged database: `conflict`, as a corrupt file is.
TEST(StoreRecords, ARecordThatDoesNotParseIsAConflict) {
  for (const char* bad : {"not json", "[]", R"({"name": 3})"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(node_record_from_json(bad).error().code, ErrorCode::conflict);
    EXPECT_EQ(fence_from_json(bad).error().code, ErrorCode::conflict);
    EXPECT_EQ(project_from_json(bad).error().code, ErrorCode::conflict);
    EXPECT_EQ(usage_record_from_json(bad).error().code, ErrorCode::conflict);
  }
}

}  // namespace
}  // namespace tessel::scheduler::testing
