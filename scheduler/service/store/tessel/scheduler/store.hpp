#pragma once
// Store: durable scheduler state (jobs, nodes, card fences, projects, usage records) behind an interface,
// on SQLite (embedded, the default) or PostgreSQL, so tests can wrap it (FaultyStore)
// or use ":memory:". Records are whole JSON
// documents keyed by id; a WriteBatch is applied atomically. write() returns
// only once the batch is durable against a process crash (kill -9), so a 201
// means the job is on disk.
// Thread-safe: any thread may call write() concurrently; implementations may
// group concurrent batches into one transaction (group commit).

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/project.hpp"
#include "tessel/api/reservation.hpp"
#include "tessel/base/result.hpp"

namespace tessel::scheduler {

// What the scheduler remembers about a node across restarts. Whether it is down
// is not stored: after a restart every node counts as alive from the restart time.
struct NodeRecord {
  std::string name;
  std::string address;
  int agent_port = 0;
  bool drained = false;
  api::NodeInventory inventory;
  int64_t last_heartbeat_ms = 0;
  // The scheduler's credential towards the node's agent (RegisterResponse::scheduler_key),
  // kept so log reads work across a scheduler restart. Never shown by the API.
  std::string scheduler_key;
  // The labels admins set (PUT /v1/nodes/{name}/labels, issue 32). They win over the
  // agent's (inventory.labels) of the same key; "labels" in the record, absent when none.
  api::Labels labels;
};

// Cards still held for an assignment the scheduler no longer wants, until a
// report shows its processes gone. id is the assignment id.
struct Fence {
  std::string id;
  std::string job_id;
  api::Allocation allocation;
};

// Accounting: the cards one attempt of a job held, from when all its ranks ran
// (started_at) to its end, by model. Written in the batch that ends the attempt;
// never deleted, so usage outlives the job's pruning (schema version 4).
struct UsageRecord {
  std::string job_id;
  int attempt = 0;
  std::string project, user;
  std::map<std::string, int64_t> cards;  // Model -> cards of it.
  int64_t start_ms = 0, end_ms = 0;
  // CPUs the attempt held, over all its nodes (0: none counted): a job without cards
  // is accounted in CPU-seconds. And what its tasks measured (api::Job's fields).
  int64_t cpus = 0;
  std::optional<double> cpu_seconds;
  std::optional<int64_t> max_rss_mib;
  std::string key() const { return job_id + "/" + std::to_string(attempt); }  // Unique per attempt.
  bool operator==(const UsageRecord&) const = default;
};

// An admin-issued agent token (POST /v1/nodes/{name}/token), bound to its node:
// only the token's SHA-256 is kept (schema version 5), one per node.
struct NodeToken {
  std::string node;
  std::string sha256;  // Lower-case hex of the token's SHA-256.
  int64_t issued_at_ms = 0;
  bool operator==(const NodeToken&) const = default;
};

struct WriteBatch {
  std::vector<api::Job> jobs;            // Upserted; the id carries the sequence number.
  std::vector<std::string> delete_jobs;  // Ids of ended jobs pruned from history; applied after `jobs`.
  std::vector<NodeRecord> nodes;
  std::vector<std::string> delete_nodes;  // Names; applied after `nodes`.
  std::vector<Fence> put_fences;
  std::vector<std::string> delete_fences;
  // Projects (schema version 3): upserted by name, then deleted by name. Stored
  // like fences, one JSON document per project (project_to_json); an
  // implementation keeps them in a table keyed by name.
  std::vector<api::Project> put_projects;
  std::vector<std::string> delete_projects;
  std::vector<UsageRecord> put_usage;           // Upserted by key().
  std::vector<NodeToken> put_node_tokens;       // Upserted by node.
  std::vector<std::string> delete_node_tokens;  // Node names; applied after put_node_tokens.
  // Reservations (issue 32; SQLite schema version 6, PostgreSQL 7): upserted by name,
  // then deleted by name (api::to_json(Reservation)).
  std::vector<api::Reservation> put_reservations;
  std::vector<std::string> delete_reservations;
  bool empty() const {
    return jobs.empty() && nodes.empty() && delete_nodes.empty() && put_fences.empty() && delete_fences.empty() &&
           put_projects.empty() && delete_projects.empty() && put_usage.empty() && delete_jobs.empty() &&
           put_node_tokens.empty() && delete_node_tokens.empty() && put_reservations.empty() &&
           delete_reservations.empty();
  }
};

struct Snapshot {
  std::vector<api::Job> jobs;  // Ascending sequence.
  std::vector<NodeRecord> nodes;
  std::vector<Fence> fences;
  std::vector<api::Project> projects;          // Ascending name.
  std::vector<UsageRecord> usage;              // Ascending key.
  std::vector<NodeToken> node_tokens;          // Ascending node.
  std::vector<api::Reservation> reservations;  // Ascending name.
  // A follower's PgStore only: nothing changed since its previous load (the fields are complete all the same).
  bool unchanged = false;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual Status write(const WriteBatch& batch) = 0;
  // Queues `batch` behind every batch written or queued before it and returns at once;
  // the future answers as write() would. Stores without a queue write here and answer
  // a ready future (the same order: nothing after it starts before it ends).
  virtual std::future<Status> write_queued(std::shared_ptr<const WriteBatch> batch) {
    const std::shared_ptr<const WriteBatch> written = std::move(batch);
    std::promise<Status> done;
    done.set_value(write(*written));
    return done.get_future();
  }
  virtual Result<Snapshot> load() = 0;
};

// When a COMMIT counts as done (SQLite's PRAGMA synchronous in WAL mode).
enum class SyncMode {
  full,    // fsync of the WAL before COMMIT returns: on disk, survives power loss and a file
           // system that aborts its journal (the default).
  normal,  // WAL written to the OS before COMMIT returns: survives kill -9 of the process,
           // not a power loss or a file system going read-only under it.
};

// SQLite in WAL mode at `path` (":memory:" for tests). Opens, applies schema
// migrations (PRAGMA user_version) and starts the group-commit writer thread.
Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, SyncMode sync = SyncMode::full);

// PostgreSQL at `uri` ("postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME?..." or
// "postgres://..."). Connects, takes the database's scheduler lock (a session-level
// advisory lock: one scheduler per database, waiting up to 5 s for a crashed one's
// session to end), applies schema migrations (the schema_version table) and starts
// the group-commit writer thread. Every COMMIT runs with synchronous_commit on. A lost
// connection fails the writes in flight with an `unavailable` error and is made again,
// lock included, on the next write or load.
// How a PgStore keeps other schedulers from committing to its database.
struct PgStoreOptions {
  // 0: one scheduler per database, through the advisory lock above (the default).
  // > 0: replicas share the database and this one holds the leader lease with this
  // epoch (pg_lease.hpp): no advisory lock; every write transaction first reads the
  // lease's epoch (FOR SHARE) and rolls back, failing with `unavailable`, unless it
  // is still this one, so a scheduler that lost the lease never commits.
  int64_t leader_epoch = 0;
  // Called once, on the writer thread, when a write found a newer epoch (its argument).
  std::function<void(int64_t)> on_fenced;
  // A follower's reader: load() only, no lock of any kind; every write fails
  // (`unavailable`). Overrides leader_epoch.
  bool read_only = false;
};
Result<std::unique_ptr<Store>> open_pg_store(const std::string& uri, PgStoreOptions opts = {});
// What opens a PostgreSQL store's write transaction: BEGIN, and an idle limit after
// which the server ends the transaction (a paused leader's) and its locks.
std::string pg_write_begin_sql();

// The store --db names: PostgreSQL for a postgresql:// or postgres:// URI, else the
// SQLite file at `db` (`sync` applies to SQLite only).
Result<std::unique_ptr<Store>> open_store(const std::string& db, SyncMode sync = SyncMode::full);

// Wraps a store; while fail_writes is set every write fails and stores nothing. An
// empty batch writes nothing and succeeds, as in the real stores (a scheduling pass
// that places nothing commits one).
class FaultyStore final : public Store {
 public:
  explicit FaultyStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::atomic<bool> fail_writes{false};
  Status write(const WriteBatch& batch) override {
    if (batch.empty()) return ok_status();
    if (fail_writes) return Error{"injected write failure"};
    return inner_->write(batch);
  }
  Result<Snapshot> load() override { return inner_->load(); }

 private:
  std::unique_ptr<Store> inner_;
};

// Job ids are "j-" + a zero-padded sequence number; returns the number, or -1.
// The stores key jobs by it. An array element ("j-00000042_7") has a negative one,
// -job_key(id) (below -1), so that no plain job's number changes and none collides.
int64_t job_seq(const std::string& id);
std::string make_job_id(int64_t seq);

// The scheduler's in-memory order of jobs: a job's (or array parent's) key is
// seq << kArrayKeyBits, its elements' that plus index + 1, so an array sorts right
// after its parent, its elements by index, all before the next job. -1 for an id
// that is neither (or a sequence number of 2^48 or more).
inline constexpr int kArrayKeyBits = 14;  // 2^14 > api::kMaxArrayCount.
int64_t job_key(const std::string& id);
inline int64_t key_of_seq(int64_t seq) { return seq << kArrayKeyBits; }
inline bool is_element_key(int64_t key) { return (key & ((int64_t{1} << kArrayKeyBits) - 1)) != 0; }
inline int64_t parent_key(int64_t key) { return key & ~((int64_t{1} << kArrayKeyBits) - 1); }

// JSON forms of the stored records.
std::string node_record_to_json(const NodeRecord& n);
Result<NodeRecord> node_record_from_json(const std::string& text);
std::string fence_to_json(const Fence& f);
Result<Fence> fence_from_json(const std::string& text);
std::string project_to_json(const api::Project& p);
Result<api::Project> project_from_json(const std::string& text);
std::string usage_record_to_json(const UsageRecord& u);
Result<UsageRecord> usage_record_from_json(const std::string& text);
std::string node_token_to_json(const NodeToken& t);
Result<NodeToken> node_token_from_json(const std::string& text);
std::string reservation_to_json(const api::Reservation& r);
Result<api::Reservation> reservation_from_json(const std::string& text);

}  // namespace tessel::scheduler
