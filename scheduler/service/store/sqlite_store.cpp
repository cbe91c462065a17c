// SqliteStore: the Store on SQLite with group commit (GroupCommitter): each group
// of queued batches is one transaction. The committer's writer thread is the only
// user of the Db besides load().

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tessel/scheduler/group_commit.hpp"
#include "tessel/scheduler/sqlite_db.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

namespace {

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  Status write(const WriteBatch& batch) override { return committer_.write(batch); }
  std::future<Status> write_queued(std::shared_ptr<const WriteBatch> batch) override {
    return committer_.queue(std::move(batch));
  }

  Result<Snapshot> load() override EXCLUDES(db_mu_) {
    // Runs on the writer's Db under db_mu_; callers load before writing.
    MutexLock lk(db_mu_);
    return read_snapshot(*db_);
  }

 private:
  Status commit(const std::vector<const WriteBatch*>& group) EXCLUDES(db_mu_) {
    MutexLock lk(db_mu_);
    if (auto s = db_->exec("BEGIN IMMEDIATE"); !s) return s.error().wrap("begin");
    Status s = apply_all(group);
    if (!s) {
      (void)db_->exec("ROLLBACK");
      return s;
    }
    if (auto c = db_->exec("COMMIT"); !c) {
      (void)db_->exec("ROLLBACK");
      return c.error().wrap("commit");
    }
    return ok_status();
  }

  Status apply_all(const std::vector<const WriteBatch*>& group) REQUIRES(db_mu_) {
    Stmt job(db_->raw(),
             "INSERT INTO jobs(seq, id, body) VALUES(?1, ?2, ?3) ON CONFLICT(seq) DO UPDATE SET body = excluded.body");
    Stmt node(db_->raw(),
              "INSERT INTO nodes(name, body) VALUES(?1, ?2) ON CONFLICT(name) DO UPDATE SET body = excluded.body");
    Stmt fence(db_->raw(),
               "INSERT INTO fences(id, body) VALUES(?1, ?2) ON CONFLICT(id) DO UPDATE SET body = excluded.body");
    Stmt unfence(db_->raw(), "DELETE FROM fences WHERE id = ?1");
    Stmt unnode(db_->raw(), "DELETE FROM nodes WHERE name = ?1");
    Stmt project(
        db_->raw(),
        "INSERT INTO projects(name, body) VALUES(?1, ?2) ON CONFLICT(name) DO UPDATE SET body = excluded.body");
    Stmt unproject(db_->raw(), "DELETE FROM projects WHERE name = ?1");
    Stmt unjob(db_->raw(), "DELETE FROM jobs WHERE seq = ?1");
    Stmt usage(
        db_->raw(),
        "INSERT INTO usage_records(key, body) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET body = excluded.body");
    Stmt node_token(
        db_->raw(),
        "INSERT INTO node_tokens(node, body) VALUES(?1, ?2) ON CONFLICT(node) DO UPDATE SET body = excluded.body");
    Stmt unnode_token(db_->raw(), "DELETE FROM node_tokens WHERE node = ?1");
    Stmt reservation(
        db_->raw(),
        "INSERT INTO reservations(name, body) VALUES(?1, ?2) ON CONFLICT(name) DO UPDATE SET body = excluded.body");
    Stmt unreservation(db_->raw(), "DELETE FROM reservations WHERE name = ?1");
    if (!job.ok() || !node.ok() || !fence.ok() || !unfence.ok() || !unnode.ok() || !project.ok() || !unproject.ok() ||
        !unjob.ok() || !usage.ok() || !node_token.ok() || !unnode_token.ok() || !reservation.ok() ||
        !unreservation.ok())
      return Error{"prepare: " + db_->errmsg()};
    auto run = [&](Stmt& st) REQUIRES(db_mu_) -> Status {
      int rc = st.step();
      st.reset();
      if (rc != SQLITE_DONE) return Error{db_->errmsg()};
      return ok_status();
    };
    for (const WriteBatch* batch : group) {
      const WriteBatch& b = *batch;
      for (const auto& j : b.jobs) {
        job.bind(1, job_seq(j.id));
        job.bind(2, j.id);
        job.bind(3, api::to_json(j).dump());
        if (auto s = run(job); !s) return s.error().wrap("writing job " + j.id);
      }
      for (const auto& id : b.delete_jobs) {
        unjob.bind(1, job_seq(id));
        if (auto s = run(unjob); !s) return s.error().wrap("deleting job " + id);
      }
      for (const auto& n : b.nodes) {
        node.bind(1, n.name);
        node.bind(2, node_record_to_json(n));
        if (auto s = run(node); !s) return s.error().wrap("writing node " + n.name);
      }
      for (const auto& name : b.delete_nodes) {
        unnode.bind(1, name);
        if (auto s = run(unnode); !s) return s.error().wrap("deleting node " + name);
      }
      for (const auto& f : b.put_fences) {
        fence.bind(1, f.id);
        fence.bind(2, fence_to_json(f));
        if (auto s = run(fence); !s) return s.error().wrap("writing fence " + f.id);
      }
      for (const auto& id : b.delete_fences) {
        unfence.bind(1, id);
        if (auto s = run(unfence); !s) return s.error().wrap("deleting fence " + id);
      }
      for (const auto& p : b.put_projects) {
        project.bind(1, p.name);
        project.bind(2, project_to_json(p));
        if (auto s = run(project); !s) return s.error().wrap("writing project " + p.name);
      }
      for (const auto& name : b.delete_projects) {
        unproject.bind(1, name);
        if (auto s = run(unproject); !s) return s.error().wrap("deleting project " + name);
      }
      for (const auto& u : b.put_usage) {
        usage.bind(1, u.key());
        usage.bind(2, usage_record_to_json(u));
        if (auto s = run(usage); !s) return s.error().wrap("writing usage " + u.key());
      }
      for (const auto& t : b.put_node_tokens) {
        node_token.bind(1, t.node);
        node_token.bind(2, node_token_to_json(t));
        if (auto s = run(node_token); !s) return s.error().wrap("writing the token of node " + t.node);
      }
      for (const auto& name : b.delete_node_tokens) {
        unnode_token.bind(1, name);
        if (auto s = run(unnode_token); !s) return s.error().wrap("deleting the token of node " + name);
      }
      for (const auto& r : b.put_reservations) {
        reservation.bind(1, r.name);
        reservation.bind(2, reservation_to_json(r));
        if (auto s = run(reservation); !s) return s.error().wrap("writing reservation " + r.name);
      }
      for (const auto& name : b.delete_reservations) {
        unreservation.bind(1, name);
        if (auto s = run(unreservation); !s) return s.error().wrap("deleting reservation " + name);
      }
    }
    return ok_status();
  }

  Mutex db_mu_;  // Serialises load() with the writer's commits.
  std::unique_ptr<Db> db_ PT_GUARDED_BY(db_mu_);
  // Last: its writer stops (committing what is queued) before db_ goes.
  GroupCommitter committer_{[this](const std::vector<const WriteBatch*>& group) { return commit(group); }};
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, SyncMode sync) {
  auto db = Db::open(path, sync);
  if (!db) return db.error();
  return std::unique_ptr<Store>(new SqliteStore(std::move(*db)));
}

}  // namespace tessel::scheduler
